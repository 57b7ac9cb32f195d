// azd `postdeploy` hook (azure.yaml): deploys the code to every payment shard past the first. `azd deploy` deploys
// service `api` to the app tagged `azd-service-name: api`, shard 0; the other shards' apps (`api-s<i>`) are listed, shard 0
// first, in the provisioning output SHARD_FUNCTION_NAMES, which azd hands to its hooks as an environment variable (a
// JSON array). Each is published the way docs/deploy.md section 11 gives by hand: Core Tools, remote build. With one
// shard there is nothing to do. SHARD_DEPLOY_DRY_RUN=1 prints the commands instead of running them.
import { spawnSync } from 'node:child_process';

const APP_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,59}$/;

/** The apps past shard 0, from the output's text. @throws Error on a value that is not a JSON array of app names */
export function shardAppsPastFirst(text) {
  if (text === undefined || text.trim() === '') return [];
  let names;
  try {
    names = JSON.parse(text);
  } catch {
    throw new Error(`SHARD_FUNCTION_NAMES is not JSON (azd writes the output as a JSON array): ${text.slice(0, 80)}`);
  }
  if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || !APP_NAME.test(n)))
    throw new Error(`SHARD_FUNCTION_NAMES must be a JSON array of Function App names, got ${text.slice(0, 80)}`);
  return names.slice(1);
}

function main() {
  const apps = shardAppsPastFirst(process.env.SHARD_FUNCTION_NAMES);
  if (apps.length === 0) {
    console.log('deployShards: one shard, deployed by azd deploy: nothing more to do');
    return 0;
  }
  const dryRun = process.env.SHARD_DEPLOY_DRY_RUN === '1';
  for (const app of apps) {
    const args = ['azure', 'functionapp', 'publish', app, '--build', 'remote'];
    console.log(`deployShards: func ${args.join(' ')}`);
    if (dryRun) continue;
    const run = spawnSync('func', args, { stdio: 'inherit' });
    if (run.error || run.status !== 0) {
      const why = run.error ? `${run.error.message} (Azure Functions Core Tools 4 must be on PATH)` : `exit ${run.status}`;
      console.error(`deployShards: publishing ${app} failed: ${why}. Shards not deployed from here: ${apps.slice(apps.indexOf(app)).join(', ')}`);
      return 1;
    }
  }
  console.log(`deployShards: ${apps.length} shard app(s) past the first deployed`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    process.exitCode = main();
  } catch (error) {
    console.error(`deployShards: ${error.message}`);
    process.exitCode = 1;
  }
}
