// `pnpm test` runs this after the type check: jest over the whole suite, then one plain
// closing line "tests: N passed, N failed" that CI reads.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const out = join(mkdtempSync(join(tmpdir(), 'hookline-jest-')), 'results.json');
const args = ['--json', `--outputFile=${out}`, ...process.argv.slice(2)];
const run = spawnSync(resolve(ROOT, 'node_modules/.bin/jest'), args, { cwd: ROOT, stdio: 'inherit' });

if (!existsSync(out)) {
  console.error('tests: jest wrote no results');
  process.exit(run.status ?? 1);
}
const r = JSON.parse(readFileSync(out, 'utf8')) as { numPassedTests: number; numFailedTests: number; numPendingTests: number; numTotalTests: number; numRuntimeErrorTestSuites: number };
const failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
console.log(`\ntests: ${r.numPassedTests} passed, ${failed} failed${r.numPendingTests ? `, ${r.numPendingTests} skipped` : ''}`);
if (r.numTotalTests === 0) {
  console.error('tests: no test ran');
  process.exit(1);
}
process.exit(run.status ?? 1);
