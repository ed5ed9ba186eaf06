// The fault schedule: kill -9 of worker services (then restart), Redis restarted empty,
// PostgreSQL stopped hard and started again. Printed before the run, logged as it happens.
import type { Stack, ServiceName } from '../lib/stack';
import type { Outage } from './chaos-load';
import type { PrivatePostgres } from '../lib/private-postgres';
import type { PrivateRedis } from '../lib/private-redis';

export type FaultKind = ServiceName | 'redis' | 'postgres';

export interface PlannedFault {
  atMs: number;
  kind: FaultKind;
}

export interface FaultLog {
  kind: FaultKind;
  plannedAtMs: number;
  startedAtMs: number;
  /** Epoch ms the fault began. */
  at: number;
  recoveredAfterMs: number;
  detail: string;
}

/** "router:3,deliverer:3,ingest:3,redis:1,postgres:1" -> interleaved kills, spread evenly. */
export function planFaults(spec: string, sendMs: number): PlannedFault[] {
  const counts = new Map<FaultKind, number>();
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [kind = '', n = '1'] = part.split(':');
    if (!['router', 'deliverer', 'ingest', 'api', 'redis', 'postgres'].includes(kind)) throw new Error(`unknown fault "${kind}"`);
    counts.set(kind as FaultKind, Number(n));
  }
  const services = [...counts].filter(([k]) => k !== 'redis' && k !== 'postgres');
  const kinds: FaultKind[] = [];
  for (let round = 0; services.some(([, n]) => n > round); round++) for (const [k, n] of services) if (n > round) kinds.push(k);
  // Redis and PostgreSQL faults in the middle of the run, apart from each other.
  if (counts.get('redis')) kinds.splice(Math.floor(kinds.length / 3), 0, ...Array<FaultKind>(counts.get('redis')!).fill('redis'));
  if (counts.get('postgres')) kinds.splice(Math.floor((2 * kinds.length) / 3) + 1, 0, ...Array<FaultKind>(counts.get('postgres')!).fill('postgres'));
  const from = sendMs * 0.1;
  const span = sendMs * 0.75;
  return kinds.map((kind, i) => ({ kind, atMs: Math.round(from + (kinds.length > 1 ? (span * i) / (kinds.length - 1) : 0)) }));
}

export interface FaultDeps {
  stack: Stack;
  redis: PrivateRedis | null;
  pg: PrivatePostgres | null;
  pgDownMs: number;
  outages: Outage[];
  log: (line: string) => void;
}

/**
 * Injects one fault and resolves with its description once the system is back. A killed
 * service restarts in the background so that the schedule keeps its pace; the next kill
 * of the same service waits for that restart.
 */
function inject(d: FaultDeps, kind: FaultKind, restarting: Map<FaultKind, Promise<unknown>>): { done: Promise<string> } {
  if (kind === 'redis') {
    if (!d.redis) return { done: Promise.resolve('skipped (no private Redis)') };
    return { done: d.redis.restartEmpty(1000).then(() => 'redis-server killed -9 and restarted empty') };
  }
  if (kind === 'postgres') {
    const pg = d.pg;
    if (!pg) return { done: Promise.resolve('skipped (no private PostgreSQL)') };
    const run = async (): Promise<string> => {
      await pg.stop();
      const outage = { from: Date.now(), to: Number.MAX_SAFE_INTEGER };
      d.outages.push(outage);
      await new Promise((r) => setTimeout(r, d.pgDownMs));
      outage.to = Date.now();
      await pg.start();
      return `PostgreSQL immediate shutdown, down ${d.pgDownMs} ms, restarted`;
    };
    return { done: run() };
  }
  const run = async (): Promise<string> => {
    await restarting.get(kind);
    const pid = d.stack.children[kind]?.pid;
    await d.stack.kill(kind, 'SIGKILL');
    await d.stack.start(kind);
    return `kill -9 ${kind} (pid ${pid}), restarted as pid ${d.stack.children[kind]?.pid}`;
  };
  const done = run();
  restarting.set(kind, done.catch(() => undefined));
  return { done };
}

/** Runs the plan against the clock that started at `t0`; resolves when every fault is over. */
export async function runFaults(d: FaultDeps, plan: PlannedFault[], t0: number): Promise<FaultLog[]> {
  const logs: FaultLog[] = [];
  const restarting = new Map<FaultKind, Promise<unknown>>();
  const running: Promise<void>[] = [];
  const stamp = (): string => `t+${((Date.now() - t0) / 1000).toFixed(1)} s`;
  for (const f of plan) {
    const wait = t0 + f.atMs - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const started = Date.now();
    d.log(`  ${stamp()}  ${f.kind === 'redis' || f.kind === 'postgres' ? `restarting ${f.kind}` : `kill -9 ${f.kind}`}`);
    const { done } = inject(d, f.kind, restarting);
    const logged = done.then((detail) => {
      const recoveredAfterMs = Date.now() - started;
      d.log(`  ${stamp()}  ${detail} (back after ${recoveredAfterMs} ms)`);
      logs.push({ kind: f.kind, plannedAtMs: f.atMs, startedAtMs: started - t0, at: started, recoveredAfterMs, detail });
    });
    running.push(logged);
    // Redis and PostgreSQL faults are not overlapped with anything else.
    if (f.kind === 'redis' || f.kind === 'postgres') await logged;
  }
  await Promise.all(running);
  return logs.sort((a, b) => a.at - b.at);
}
