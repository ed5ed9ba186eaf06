// The entry points of the main image (no build tooling imported here: the offline deploy
// checks read this list).
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(__dirname, '../..');

/** Every entry point the image, the manifests and `pnpm start` run; `pnpm build` bundles each. */
export const ENTRIES = [
  'services/api/src/main.ts',
  'services/ingest/src/main.ts',
  'services/router/src/main.ts',
  'services/deliverer/src/main.ts',
  'scripts/migrate.ts',
  'deploy/scripts/wait-for-migrations.ts',
] as const;

/** Where `scripts/launch.cjs` looks for an entry's bundle: `<dist>/<entry without .ts>.js`. */
export function bundlePath(entry: string, distDir = join(REPO_ROOT, 'dist')): string {
  return join(distDir, entry.replace(/\.ts$/, '.js'));
}
