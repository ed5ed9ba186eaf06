// Runs an entry point as the image does: its `pnpm build` bundle through scripts/launch.cjs
// on plain node. Bundles are built once per process (tests, `pnpm bench`, `pnpm chaos`) into
// a private temporary folder (never the checkout's dist/, which may be stale or in use),
// removed when the process exits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundleEntry, bundlePath } from '../../../scripts/lib/bundle';
import { serviceNodeOptions } from '../../../scripts/lib/entries';

const ROOT = resolve(__dirname, '../../..');
let distDir: string | undefined;
const builds = new Map<string, Promise<void>>();

function dist(): string {
  if (!distDir) {
    const dir = mkdtempSync(join(tmpdir(), 'hookline-test-dist-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    distDir = dir;
  }
  return distDir;
}

export interface ShippedCommand {
  command: string;
  args: string[];
  /** HOOKLINE_DIST_DIR: where the launcher finds the bundle; NODE_OPTIONS: the image's V8 flags. */
  env: Record<string, string>;
}

/** Bundles the entry (once per process) and returns the dist folder (HOOKLINE_DIST_DIR for the launcher). */
async function bundled(entry: string): Promise<string> {
  const dir = dist();
  let build = builds.get(entry);
  if (!build) {
    build = bundleEntry(entry, bundlePath(entry, dir));
    builds.set(entry, build);
  }
  await build;
  return dir;
}

/**
 * `node scripts/launch.cjs <entry>` with the entry's V8 flags (nodeOptionsFor: the image's
 * NODE_OPTIONS, or the deliverer's own), then `userNodeOptions`, which win; the entry
 * bundled first.
 */
export async function shippedCommand(entry: string, userNodeOptions = process.env.NODE_OPTIONS): Promise<ShippedCommand> {
  const dir = await bundled(entry);
  const env = { HOOKLINE_DIST_DIR: dir, NODE_OPTIONS: serviceNodeOptions(entry, userNodeOptions) };
  return { command: process.execPath, args: [resolve(ROOT, 'scripts/launch.cjs'), entry], env };
}
