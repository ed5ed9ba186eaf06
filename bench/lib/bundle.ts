// The services as shipped (`--runtime bundle`, the default): `pnpm build`'s esbuild
// bundles, run through scripts/launch.cjs as the image runs them. Built into a temporary
// folder so that a run never trips over (or leaves behind) the checkout's dist/.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleEntry, bundlePath } from '../../scripts/lib/bundle';
import { onExitSync } from './children';

/** Bundles `services/<name>/src/main.ts` for each name; returns the dist folder (HOOKLINE_DIST_DIR). */
export async function bundleServices(names: readonly string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'hookline-bench-build-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  for (const name of names) await bundleEntry(`services/${name}/src/main.ts`, bundlePath(`services/${name}/src/main.ts`, dir));
  return dir;
}
