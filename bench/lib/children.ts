// Every process the harnesses start goes through here, so that all of them are killed when
// the harness exits, fails or gets Ctrl-C: a benchmark must never leave servers behind.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** The last few KB of stdout+stderr, for error messages. */
  tail(): string;
  exited: Promise<number | null>;
  alive(): boolean;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

const live = new Set<Child>();
const exitHooks: Array<() => void> = [];
let hooked = false;

function killAll(): void {
  for (const c of live) if (c.alive()) c.proc.kill('SIGKILL');
  for (const h of exitHooks.splice(0)) {
    try {
      h();
    } catch {
      // best effort on the way out
    }
  }
}

/** A synchronous clean-up run on exit and on signals (e.g. removing a temp data folder). */
export function onExitSync(fn: () => void): void {
  hookExit();
  exitHooks.push(fn);
}

const interruptHooks = new Set<() => Promise<void>>();

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\n${sig}: stopping ${live.size} child process(es) and cleaning up\n`);
      killAll();
      // Async clean-ups (drop the run's schema, delete its Redis keys), 10 s at most.
      const timer = setTimeout(() => process.exit(130), 10_000);
      void Promise.allSettled([...interruptHooks].map((h) => h())).then(() => {
        clearTimeout(timer);
        process.exit(130);
      });
    });
  }
}

/** An async clean-up for Ctrl-C; returns a function that unregisters it (normal close). */
export function onInterrupt(fn: () => Promise<void>): () => void {
  hookExit();
  interruptHooks.add(fn);
  return () => void interruptHooks.delete(fn);
}

/** Spawns a tracked child process; its output is kept (bounded) and optionally echoed. */
export function startChild(name: string, cmd: string, args: string[], opts: Omit<SpawnOptions, 'stdio'> & { echo?: boolean; ipc?: boolean } = {}): Child {
  hookExit();
  const { echo, ipc, ...spawnOpts } = opts;
  const proc = spawn(cmd, args, { cwd: ROOT, ...spawnOpts, stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer): void => {
    out = (out + d.toString()).slice(-8000);
    if (echo) process.stderr.write(`[${name}] ${d.toString()}`);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code, signal) => r(code ?? (signal ? 128 : null))));
  const child: Child = {
    name,
    proc,
    pid: proc.pid ?? -1,
    tail: () => out,
    exited,
    alive: () => proc.exitCode === null && proc.signalCode === null,
    async kill(signal = 'SIGTERM') {
      if (child.alive()) proc.kill(signal);
      const timer = setTimeout(() => child.alive() && proc.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  live.add(child);
  void exited.then(() => live.delete(child));
  return child;
}

/** Node with the tsx loader, so TypeScript entry points run without a build step. */
export function nodeTs(entry: string, nodeFlags: string[] = []): [string, string[]] {
  return [process.execPath, [...nodeFlags, '--import', 'tsx', resolve(ROOT, entry)]];
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((c) => c.kill('SIGTERM')));
}
