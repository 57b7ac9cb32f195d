import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Extractor, ExtractorConfig, type ExtractorResult } from '@microsoft/api-extractor';

/**
 * The checked-in API report (`packages/idempotency/etc/azure-functions-idempotency.api.md`, API Extractor) is the
 * package's public API as built now: a change to it fails here until the report is updated
 * (`npm run api:report`), so a breaking change shows in review.
 */
const ROOT = join(__dirname, '..', '..');
const PACKAGE = join(ROOT, 'packages', 'idempotency');
const CONFIG = join(PACKAGE, 'api-extractor.json');
const REPORT = 'azure-functions-idempotency.api.md';

/** Runs API Extractor as CI does (not `--local`: a differing report is an error, never rewritten), against `reportFolder`. */
function extract(reportFolder?: string): ExtractorResult {
  const configObject = ExtractorConfig.loadFile(CONFIG);
  if (reportFolder) configObject.apiReport = { ...configObject.apiReport!, enabled: true, reportFolder, reportTempFolder: join(reportFolder, 'temp') };
  const config = ExtractorConfig.prepare({ configObject, configObjectFullPath: CONFIG, packageJsonFullPath: join(PACKAGE, 'package.json') });
  return Extractor.invoke(config, { localBuild: false, messageCallback: (message) => void (message.handled = true) });
}

beforeAll(() => {
  // The report is of the built declarations: build the package (tsc -b: a no-op when it is up to date).
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', PACKAGE], { stdio: 'inherit' });
}, 120_000);

describe('the API report of azure-functions-idempotency', () => {
  test('the checked-in report is the built API (run `npm run api:report` and commit it after an API change)', () => {
    const result = extract();
    expect(result.apiReportChanged).toBe(false);
    expect(result.succeeded).toBe(true);
  }, 120_000);

  test('a report that differs from the built API fails the check (the check is not vacuous)', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'api-report-'));
    try {
      copyFileSync(join(PACKAGE, 'etc', REPORT), join(scratch, REPORT));
      const report = readFileSync(join(scratch, REPORT), 'utf8');
      expect(report).toContain('export class TableIdempotencyStore');
      writeFileSync(join(scratch, REPORT), report.replace('export class TableIdempotencyStore', 'export class RenamedStore'));
      const result = extract(scratch);
      expect(result.apiReportChanged).toBe(true);
      expect(result.succeeded).toBe(false);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});
