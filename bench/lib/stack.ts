// Hookline's four services as separate processes (as shipped: the bundles run by
// scripts/launch.cjs; or node with the tsx loader when `shipped` is off), one pid each to
// sample and kill, on loopback, against a fresh schema and queue prefix. An exit that
// neither `kill` nor `close` caused is recorded (`unexpectedExits`) and, with `supervise`
// (the chaos run), the service restarted.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { createPool, migrate, parseDatabaseUrl, type Pool } from '@hookline/db';
import { freePort, shippedCommand, waitFor } from '@hookline/testing';
import { serviceNodeOptions } from '../../scripts/lib/entries';
import { nodeTs, onInterrupt, startChild, type Child } from './children';
import { dropRunData } from './run-data';

export const SERVICES = ['api', 'ingest', 'router', 'deliverer'] as const;
export type ServiceName = (typeof SERVICES)[number];

export interface StackOptions {
  label: string;
  databaseUrl: string;
  redisUrl: string;
  /** Overrides and additions to the env every service gets. */
  env?: Record<string, string>;
  /** Write a V8 CPU profile of each service into this folder on exit. */
  cpuProfDir?: string;
  /** Run the services as the image does (their bundles through scripts/launch.cjs) instead of the TypeScript sources via tsx. */
  shipped?: boolean;
  readyTimeoutMs?: number;
  /**
   * Restart a service that exits without the harness asking (a crash, an OOM kill): the
   * run goes on, and the exit stays in `unexpectedExits` for the verdict. Off: exits are
   * only recorded.
   */
  supervise?: boolean;
  /** Told of each unexpected exit and of the supervisor's restarts (a log line). */
  onSupervisorEvent?: (line: string) => void;
}

/**
 * A service that exited although neither `kill` nor `close` asked it to: while running, or
 * while starting (it exited before it was ready, or never became ready and was killed; the
 * caller of `start` gets the error too).
 */
export interface UnexpectedExit {
  service: ServiceName;
  phase: 'running' | 'start';
  pid: number;
  /** Exit code, or null when a signal ended it. */
  code: number | null;
  signal: string | null;
  /** Epoch ms. */
  at: number;
  /** The pid the supervisor restarted it as; null when not restarted (supervise off, or the restart failed). */
  restartedAs: number | null;
  /** The last lines of its output. */
  tail: string;
}

export interface Stack {
  url: string;
  schema: string;
  prefix: string;
  env: Record<string, string>;
  pool: Pool;
  ingestUrl: string;
  apiUrl: string;
  children: Partial<Record<ServiceName, Child>>;
  /** Every exit of a ready service that `kill`/`close` did not cause, in order. */
  unexpectedExits: UnexpectedExit[];
  start(name: ServiceName): Promise<Child>;
  kill(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  pids(): Partial<Record<ServiceName, number>>;
  close(opts?: { keepData?: boolean }): Promise<void>;
}

export async function startStack(opts: StackOptions): Promise<Stack> {
  const schema = `${opts.label}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const u = new URL(opts.databaseUrl);
  u.searchParams.set('schema', schema);
  const url = u.toString();
  await migrate(url);
  const prefix = `{${opts.label}-${randomBytes(4).toString('hex')}}`;
  const ports: Record<ServiceName, number> = { api: await freePort(), ingest: await freePort(), router: await freePort(), deliverer: await freePort() };
  const env: Record<string, string> = {
    DATABASE_URL: url,
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: prefix,
    SECRETS_KEY: `bench-secrets-${randomBytes(12).toString('hex')}`,
    INGEST_PUBLIC_URL: `http://127.0.0.1:${ports.ingest}`,
    SSRF_ALLOWLIST: '127.0.0.0/8,::1/128',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    ...opts.env,
  };
  const pool = createPool(url, 4);
  const dropData = (): Promise<void> => dropRunData(parseDatabaseUrl(url).connectionString, schema, opts.redisUrl, prefix);
  const unhook = onInterrupt(dropData);
  const children: Partial<Record<ServiceName, Child>> = {};
  const unexpectedExits: UnexpectedExit[] = [];
  // Children whose exit the harness caused (kill, close, a start that failed): not crashes.
  const expected = new WeakSet<Child>();
  let closing = false;
  const note = (line: string): void => opts.onSupervisorEvent?.(line);

  // A ready service that exits on its own: recorded; restarted when supervising, unless
  // someone else replaced or removed it meanwhile (a fault's kill and start).
  const watch = (name: ServiceName, child: Child): void => {
    void child.exited.then(async () => {
      if (expected.has(child) || closing) return;
      const exit: UnexpectedExit = { service: name, phase: 'running', pid: child.pid, code: child.proc.exitCode, signal: child.proc.signalCode, at: Date.now(), restartedAs: null, tail: child.tail().slice(-1500) };
      unexpectedExits.push(exit);
      note(`! ${name} (pid ${child.pid}) exited on its own (code ${exit.code}, signal ${exit.signal})${opts.supervise ? ': restarting it' : ''}`);
      if (!opts.supervise) return;
      let dead: Child | undefined = child;
      for (let n = 1; n <= 5 && !closing && children[name] === dead; n++) {
        await new Promise((r) => setTimeout(r, 250 * n));
        if (closing || children[name] !== dead) return;
        try {
          const next = await stack.start(name);
          exit.restartedAs = next.pid;
          note(`  supervisor: ${name} restarted as pid ${next.pid}`);
          return;
        } catch (err) {
          note(`  supervisor: restarting ${name} failed (${(err as Error).message.split('\n')[0]})`);
          dead = children[name];
        }
      }
    });
  };
  if (opts.cpuProfDir) mkdirSync(opts.cpuProfDir, { recursive: true });

  const stack: Stack = {
    url,
    schema,
    prefix,
    env,
    pool,
    ingestUrl: `http://127.0.0.1:${ports.ingest}`,
    apiUrl: `http://127.0.0.1:${ports.api}`,
    children,
    unexpectedExits,
    async start(name) {
      // One folder per service: the tsx loader's hooks thread writes a profile of its own.
      const flags = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(opts.cpuProfDir, name)}`] : [];
      const entry = `services/${name}/src/main.ts`;
      const userNodeOptions = env.NODE_OPTIONS ?? process.env.NODE_OPTIONS;
      const shipped = opts.shipped ? await shippedCommand(entry, userNodeOptions) : null;
      const [cmd, args] = shipped ? [shipped.command, [...flags, ...shipped.args]] : nodeTs(entry, flags);
      const launch = shipped?.env ?? { NODE_OPTIONS: serviceNodeOptions(entry, userNodeOptions) };
      const child = startChild(name, cmd, args, { env: { ...process.env, ...env, ...launch, PORT: String(ports[name]) } });
      children[name] = child;
      const base = `http://127.0.0.1:${ports[name]}`;
      await waitFor(
        async () => {
          if (!child.alive()) throw new Error(`${name} exited: ${child.tail().slice(-3000)}`);
          const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
          return res?.status === 200;
        },
        { timeoutMs: opts.readyTimeoutMs ?? 60_000, intervalMs: 100, what: `${name} /readyz` },
      ).catch((err: Error) => {
        // A start that failed: recorded, and the caller gets the error (the supervisor does
        // not restart it as well).
        expected.add(child);
        if (!closing) {
          unexpectedExits.push({ service: name, phase: 'start', pid: child.pid, code: child.proc.exitCode, signal: child.proc.signalCode, at: Date.now(), restartedAs: null, tail: child.tail().slice(-1500) });
          note(`! ${name} (pid ${child.pid}) failed to start: ${err.message.split('\n')[0]}`);
        }
        child.proc.kill('SIGKILL');
        throw new Error(`${err.message}\n--- ${name} output ---\n${child.tail().slice(-3000)}`);
      });
      watch(name, child);
      return child;
    },
    async kill(name, signal = 'SIGTERM') {
      const child = children[name];
      if (child) expected.add(child);
      await child?.kill(signal);
      if (children[name] === child) delete children[name];
    },
    pids() {
      const out: Partial<Record<ServiceName, number>> = {};
      for (const n of SERVICES) if (children[n]?.alive()) out[n] = children[n]!.pid;
      return out;
    },
    async close(closeOpts = {}) {
      closing = true;
      unhook();
      await Promise.all(SERVICES.map((n) => stack.kill(n, 'SIGTERM')));
      await pool.end().catch(() => undefined);
      if (!closeOpts.keepData) await dropData();
    },
  };
  try {
    await Promise.all(SERVICES.map((n) => stack.start(n)));
  } catch (err) {
    await stack.close();
    throw err;
  }
  return stack;
}
