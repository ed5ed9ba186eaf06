// `pnpm build`: bundles every entry point into dist/ (what the image and `pnpm start` run).
//   pnpm build                             all entry points
//   pnpm build services/api/src/main.ts    only these
//   pnpm build --out /tmp/dist             into another folder (HOOKLINE_DIST_DIR for the launcher)
// Without --out, into HOOKLINE_DIST_DIR when it is set: where scripts/launch.cjs looks.
import { statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleEntry, bundlePath, ENTRIES, REPO_ROOT } from './lib/bundle';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
  const unknown = positionals.filter((e) => !(ENTRIES as readonly string[]).includes(e));
  if (unknown.length > 0) throw new Error(`not an entry point: ${unknown.join(', ')} (known: ${ENTRIES.join(', ')})`);
  const entries = positionals.length > 0 ? positionals : [...ENTRIES];
  const dir = values.out ?? process.env.HOOKLINE_DIST_DIR;
  const out = dir ? resolve(dir) : join(REPO_ROOT, 'dist');
  const started = Date.now();
  for (const [i, entry] of entries.entries()) {
    const file = bundlePath(entry, out);
    const t = Date.now();
    await bundleEntry(entry, file);
    console.log(`[${i + 1}/${entries.length}] ${entry} -> ${relative(process.cwd(), file)} (${Math.round(statSync(file).size / 1024)} KB, ${Date.now() - t} ms)`);
  }
  console.log(`built ${entries.length} bundle(s) into ${relative(process.cwd(), out) || '.'} in ${Date.now() - started} ms`);
}

main().catch((err: Error) => {
  console.error(`build failed: ${err.message}`);
  process.exit(1);
});
