import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installedPackages, measure, stageDeployedPackage } from './deployedPackage';

/**
 * `npm run package:measure`: stages the deployed app as the remote build leaves it (see `deployedPackage.ts`)
 * and prints what it holds: the upload (files, bytes, and its zip's size when `zip` is installed), the
 * built `dist/`, the production `node_modules`, and the total. Sizes are the sum of file sizes; "on disk" adds
 * up the blocks the files take here (what `du` reports, larger for many small files).
 */
const root = join(__dirname, '..', '..', '..');
const work = mkdtempSync(join(tmpdir(), 'deployed-package-'));
const mb = (bytes: number) => `${(bytes / 1_000_000).toFixed(1)} MB`;
try {
  const staged = stageDeployedPackage(root, join(work, 'site'));
  const uploadBytes = staged.upload.reduce((sum, file) => sum + statSync(join(root, file)).size, 0);
  let zipped = 'zip not installed';
  try {
    const zipFile = join(work, 'upload.zip');
    execFileSync('zip', ['-q', '-X', zipFile, ...staged.upload], { cwd: root });
    zipped = mb(statSync(zipFile).size);
  } catch {
    // No zip CLI: the uncompressed figure stands alone.
  }
  const dist = measure(join(staged.dir, 'dist'));
  const modules = measure(join(staged.dir, 'node_modules'));
  const total = measure(staged.dir);
  console.log(`upload (.funcignore applied): ${staged.upload.length} files, ${mb(uploadBytes)} (zip: ${zipped})`);
  console.log(`built dist/: ${dist.files} files, ${mb(dist.bytes)}`);
  console.log(
    `production node_modules: ${modules.files} files, ${mb(modules.bytes)} (on disk ${mb(modules.diskBytes)}), ${installedPackages(join(staged.dir, 'node_modules')).length} top-level packages`,
  );
  console.log(`deployed app after the remote build: ${total.files} files, ${mb(total.bytes)} (on disk ${mb(total.diskBytes)})`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
