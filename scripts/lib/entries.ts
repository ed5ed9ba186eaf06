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

/**
 * V8 flags every service runs with: the image (`ENV NODE_OPTIONS` in the Dockerfile),
 * `pnpm start`, `pnpm start:<service>`, `pnpm bench` and `pnpm chaos`. By default V8 sizes
 * a Node 20 heap for a 4 GB limit: it grows the old space in large steps (its growing
 * factor scales with the limit) and lets each semi-space reach 16 MB. A 256 MB old-space
 * cap and 8 MB semi-spaces took the four services' peak RSS in the end-to-end benchmark
 * from 841-921 MB to 522-528 MB, with throughput within the run-to-run noise. A service's
 * live heap is far below the cap: bodies are Buffers, outside the V8 heap, and the
 * deliverer holds at most DELIVERER_MAX_CLAIMED of them. NODE_OPTIONS given by the user
 * comes after these flags, so that its own values win.
 */
export const SERVICE_NODE_OPTIONS = '--max-old-space-size=256 --max-semi-space-size=8';

/** The NODE_OPTIONS a service runs with: SERVICE_NODE_OPTIONS, then the user's own. */
export function serviceNodeOptions(userOptions: string | undefined): string {
  return [SERVICE_NODE_OPTIONS, userOptions?.trim()].filter(Boolean).join(' ');
}
