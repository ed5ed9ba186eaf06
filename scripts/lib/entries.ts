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

/**
 * Entries whose flags differ from SERVICE_NODE_OPTIONS. The deliverer keeps hundreds of
 * requests in flight, whose objects outlived an 8 MB semi-space's scavenges and were
 * promoted, to be collected by the old generation's costlier mark-compact (GC was 21-25 %
 * of its CPU). In end-to-end runs at fan-out 5 (30 s, alternating), its CPU per delivery
 * was 197-221 µs with 8 MB, 161-179 with 16 MB and 162-172 with 32 MB; its peak RSS
 * 139, ~157 and ~190 MB. Its manifests and compose service set NODE_OPTIONS to these
 * flags, over the image's default (checked offline).
 */
export const ENTRY_NODE_OPTIONS: Readonly<Record<string, string>> = {
  'services/deliverer/src/main.ts': '--max-old-space-size=256 --max-semi-space-size=16',
};

/** The V8 flags an entry runs with (before the user's own). */
export function nodeOptionsFor(entry: string): string {
  return ENTRY_NODE_OPTIONS[entry] ?? SERVICE_NODE_OPTIONS;
}

/** The NODE_OPTIONS an entry runs with: its flags (nodeOptionsFor), then the user's own. */
export function serviceNodeOptions(entry: string, userOptions: string | undefined): string {
  return [nodeOptionsFor(entry), userOptions?.trim()].filter(Boolean).join(' ');
}
