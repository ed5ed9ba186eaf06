// Starts one of the harness's own helper processes (receiver, baseline servers) with an
// IPC channel and waits for its hello (its port).
//
// `runtime: 'bundle'` runs the helper as Hookline's services run: its esbuild bundle
// (scripts/lib/bundle.ts, the bundler of `pnpm build`) through scripts/launch.cjs on plain
// node, without the tsx loader (whose module-hooks thread and on-the-fly transforms cost
// ~35-40 MB of RSS per process), so that the baselines' RSS compares with Hookline's. The
// bundles are built once per process into a private temporary folder, removed on exit.
// `runtime: 'tsx'` (the default, and `pnpm bench --runtime tsx`) runs the TypeScript source.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundleEntry, bundlePath } from '../../scripts/lib/bundle';
import { ipcClient, type IpcClient } from './ipc';
import { nodeTs, onExitSync, ROOT, startChild, type Child } from './children';

export interface Helper<H> {
  child: Child;
  ipc: IpcClient;
  hello: H;
}

export type HelperRuntime = 'bundle' | 'tsx';

let distDir: string | undefined;
const builds = new Map<string, Promise<void>>();

/** Bundles `entry` (once per process) into the private dist folder; returns that folder. */
async function bundled(entry: string): Promise<string> {
  if (!distDir) {
    const dir = mkdtempSync(join(tmpdir(), 'hookline-bench-helpers-'));
    onExitSync(() => rmSync(dir, { recursive: true, force: true }));
    distDir = dir;
  }
  let build = builds.get(entry);
  if (!build) {
    build = bundleEntry(entry, bundlePath(entry, distDir));
    builds.set(entry, build);
  }
  await build;
  return distDir;
}

/** The command that runs a helper entry: [cmd, args, extra env]. */
export async function helperCommand(entry: string, runtime: HelperRuntime): Promise<[string, string[], Record<string, string>]> {
  if (runtime === 'tsx') return [...nodeTs(entry), {}];
  const dir = await bundled(entry);
  return [process.execPath, [resolve(ROOT, 'scripts/launch.cjs'), entry], { HOOKLINE_DIST_DIR: dir }];
}

export async function startHelper<H>(name: string, entry: string, env: Record<string, string> = {}, timeoutMs = 60_000, runtime: HelperRuntime = 'tsx'): Promise<Helper<H>> {
  const [cmd, args, launch] = await helperCommand(entry, runtime);
  const child = startChild(name, cmd, args, { env: { ...process.env, ...env, ...launch }, ipc: true });
  const ipc = ipcClient(child.proc);
  let timer: NodeJS.Timeout | undefined;
  const hello = await Promise.race([
    ipc.hello as Promise<H>,
    child.exited.then((code) => Promise.reject(new Error(`${name} exited with ${code}: ${child.tail().slice(-2000)}`))),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs))),
  ]).finally(() => clearTimeout(timer));
  return { child, ipc, hello };
}
