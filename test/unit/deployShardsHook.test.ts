import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** azure.yaml's postdeploy hook: `azd up` deploys every payment shard, not only shard 0 (issue 52). */
const ROOT = join(__dirname, '..', '..');
const hook = (env: Record<string, string>) =>
  spawnSync(process.execPath, ['infra/hooks/deployShards.mjs'], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', ...env } });

describe('the deployShards hook', () => {
  test('azure.yaml runs it after deploy, on both shells', () => {
    const yaml = readFileSync(join(ROOT, 'azure.yaml'), 'utf8');
    expect(yaml).toMatch(
      /hooks:\n {2}postdeploy:\n {4}posix:\n {6}shell: sh\n {6}run: node infra\/hooks\/deployShards\.mjs\n {4}windows:\n {6}shell: pwsh\n {6}run: node infra\/hooks\/deployShards\.mjs/,
    );
  });

  test('publishes every shard app past the first, shard 0 being azd deploy’s', () => {
    const run = hook({ SHARD_FUNCTION_NAMES: '["func-api-abc","func-api-abc-s1","func-api-abc-s2"]', SHARD_DEPLOY_DRY_RUN: '1' });
    expect(run.status).toBe(0);
    expect(run.stdout).not.toContain('publish func-api-abc --build');
    expect(run.stdout).toContain('func azure functionapp publish func-api-abc-s1 --build remote');
    expect(run.stdout).toContain('func azure functionapp publish func-api-abc-s2 --build remote');
  });

  test('one shard (or no output) leaves everything to azd deploy', () => {
    for (const env of [{ SHARD_FUNCTION_NAMES: '["func-api-abc"]' }, {}] as Array<Record<string, string>>) {
      const run = hook(env);
      expect([run.status, run.stdout]).toEqual([0, expect.stringContaining('nothing more to do')]);
    }
  });

  test('a value that is not a JSON array of app names is refused with the reason, nothing published', () => {
    for (const bad of ['func-api-abc', '["ok","bad name; rm -rf /"]', '{"a":1}']) {
      const run = hook({ SHARD_FUNCTION_NAMES: bad, SHARD_DEPLOY_DRY_RUN: '1' });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/SHARD_FUNCTION_NAMES (is not JSON|must be a JSON array of Function App names)/);
      expect(run.stdout).not.toContain('publish');
    }
  });

  test('a publish that cannot run (no Core Tools) fails the hook and names the shards left', () => {
    const run = hook({ SHARD_FUNCTION_NAMES: '["a0","a1","a2"]', PATH: '/nonexistent' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('publishing a1 failed');
    expect(run.stderr).toContain('Shards not deployed from here: a1, a2');
  });
});
