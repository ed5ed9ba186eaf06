// The fault schedule: kill -9 of worker services (then restart), Redis restarted empty,
// PostgreSQL stopped hard and started again. Printed before the run, logged as it happens,
// and compared with the plan afterwards: a planned fault that did not happen makes the run
// INCOMPLETE (checkFaultSchedule).
import type { Stack, ServiceName } from '../lib/stack';
import type { Outage } from './chaos-load';
import type { PrivatePostgres } from '../lib/private-postgres';
import type { PrivateRedis } from '../lib/private-redis';

export type FaultKind = ServiceName | 'redis' | 'postgres';

/** The schedule `pnpm chaos` runs when no --faults is given. */
export const DEFAULT_FAULTS = 'router:3,deliverer:3,ingest:3,redis:1,postgres:1';

const KINDS: readonly FaultKind[] = ['router', 'deliverer', 'ingest', 'api', 'redis', 'postgres'];

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
  /** The fault really happened and the system part came back (false: skipped or failed; see detail). */
  ok: boolean;
  detail: string;
}

/** "router:3,deliverer:1" -> counts per kind, in the order given; throws on an unknown kind or count. */
export function parseFaultSpec(spec: string): Map<FaultKind, number> {
  const counts = new Map<FaultKind, number>();
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [kind = '', n = '1', ...rest] = part.split(':');
    if (!KINDS.includes(kind as FaultKind)) throw new Error(`unknown fault "${kind}" (one of ${KINDS.join(', ')})`);
    const count = Number(n);
    if (rest.length || !Number.isInteger(count) || count < 0) throw new Error(`fault "${part}": want KIND or KIND:COUNT with a whole COUNT`);
    counts.set(kind as FaultKind, (counts.get(kind as FaultKind) ?? 0) + count);
  }
  return counts;
}

/** "router:3,deliverer:3,ingest:3,redis:1,postgres:1" -> interleaved kills, spread evenly. */
export function planFaults(spec: string, sendMs: number): PlannedFault[] {
  const counts = parseFaultSpec(spec);
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

export interface FaultScheduleCheck {
  /** Every planned fault happened (and at least one was planned). */
  complete: boolean;
  /** The --faults value the plan came from, and whether it was given on the command line. */
  requested: string;
  explicit: boolean;
  /** The plan is smaller than DEFAULT_FAULTS (asked for explicitly: fine, but said so in the verdict). */
  reduced: boolean;
  planned: Partial<Record<FaultKind, number>>;
  /** Faults that happened, by kind. */
  ran: Partial<Record<FaultKind, number>>;
  /** Planned faults that did not happen, with the reason logged (or "never started"). */
  missing: Array<{ kind: FaultKind; plannedAtMs: number; why: string }>;
  /** One line, e.g. "router×3, deliverer×3, ingest×3, redis×1, postgres×1". */
  ranSummary: string;
  problems: string[];
}

const summary = (counts: Partial<Record<FaultKind, number>>): string =>
  KINDS.filter((k) => counts[k])
    .map((k) => `${k}×${counts[k]}`)
    .join(', ') || 'none';

/**
 * The fault log against the plan: each planned fault must have a log entry of its kind and
 * planned time that says it happened. A run with no fault at all is never complete: it
 * proves nothing about faults.
 */
export function checkFaultSchedule(requested: { spec: string; explicit: boolean }, plan: PlannedFault[], logs: FaultLog[]): FaultScheduleCheck {
  const planned: Partial<Record<FaultKind, number>> = {};
  const ran: Partial<Record<FaultKind, number>> = {};
  for (const f of plan) planned[f.kind] = (planned[f.kind] ?? 0) + 1;
  for (const l of logs) if (l.ok) ran[l.kind] = (ran[l.kind] ?? 0) + 1;
  const unused = [...logs];
  const missing: FaultScheduleCheck['missing'] = [];
  for (const f of plan) {
    const i = unused.findIndex((l) => l.kind === f.kind && l.plannedAtMs === f.atMs);
    const log = i >= 0 ? unused.splice(i, 1)[0] : undefined;
    if (!log) missing.push({ kind: f.kind, plannedAtMs: f.atMs, why: 'never started' });
    else if (!log.ok) missing.push({ kind: f.kind, plannedAtMs: f.atMs, why: log.detail });
  }
  const defaults = parseFaultSpec(DEFAULT_FAULTS);
  const reduced = [...defaults].some(([k, n]) => (planned[k] ?? 0) < n);
  const problems: string[] = [];
  if (plan.length === 0) problems.push('no fault was planned (--faults is empty): a chaos run without faults proves nothing');
  for (const m of missing) problems.push(`planned ${m.kind} fault at t+${(m.plannedAtMs / 1000).toFixed(1)} s did not happen: ${m.why}`);
  for (const l of unused) problems.push(`unplanned ${l.kind} fault in the log at t+${(l.startedAtMs / 1000).toFixed(1)} s`);
  return { complete: problems.length === 0, requested: requested.spec, explicit: requested.explicit, reduced, planned, ran, missing, ranSummary: summary(ran), problems };
}

export interface FaultDeps {
  stack: Stack;
  redis: PrivateRedis | null;
  pg: PrivatePostgres | null;
  pgDownMs: number;
  outages: Outage[];
  log: (line: string) => void;
}

interface Injected {
  ok: boolean;
  detail: string;
}

async function waitAlive(stack: Stack, kind: ServiceName, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (!stack.children[kind]?.alive()) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/**
 * Injects one fault and resolves with what happened once the system is back. A killed
 * service restarts in the background so that the schedule keeps its pace; the next kill
 * of the same service waits for that restart. A restart that fails is tried again (three
 * times in all); a fault that could not be injected or recovered from resolves `ok: false`.
 */
function inject(d: FaultDeps, kind: FaultKind, restarting: Map<FaultKind, Promise<unknown>>): Promise<Injected> {
  const failed = (err: unknown): Injected => ({ ok: false, detail: `failed: ${(err as Error).message.split('\n')[0]}` });
  if (kind === 'redis') {
    const redis = d.redis;
    if (!redis) return Promise.resolve({ ok: false, detail: 'skipped (no private Redis)' });
    return redis.restartEmpty(1000).then(() => ({ ok: true, detail: 'redis-server killed -9 and restarted empty' }), failed);
  }
  if (kind === 'postgres') {
    const pg = d.pg;
    if (!pg) return Promise.resolve({ ok: false, detail: 'skipped (no private PostgreSQL could be started)' });
    const run = async (): Promise<Injected> => {
      await pg.stop();
      const outage = { from: Date.now(), to: Number.MAX_SAFE_INTEGER };
      d.outages.push(outage);
      await new Promise((r) => setTimeout(r, d.pgDownMs));
      outage.to = Date.now();
      await pg.start();
      return { ok: true, detail: `PostgreSQL immediate shutdown, down ${d.pgDownMs} ms, restarted` };
    };
    return run().catch(failed);
  }
  const run = async (): Promise<Injected> => {
    await restarting.get(kind);
    // A service that crashed on its own is being restarted by the stack's supervisor.
    if (!(await waitAlive(d.stack, kind, 30_000))) return { ok: false, detail: `skipped: ${kind} was not running` };
    const pid = d.stack.children[kind]?.pid;
    await d.stack.kill(kind, 'SIGKILL');
    let lastErr: unknown;
    for (let n = 1; n <= 3; n++) {
      try {
        await d.stack.start(kind);
        return { ok: true, detail: `kill -9 ${kind} (pid ${pid}), restarted as pid ${d.stack.children[kind]?.pid}${n > 1 ? ` (start ${n})` : ''}` };
      } catch (err) {
        lastErr = err;
        d.log(`  ! restarting ${kind} failed (${(err as Error).message.split('\n')[0]})${n < 3 ? ', trying again' : ''}`);
      }
    }
    return { ok: false, detail: `kill -9 ${kind} (pid ${pid}), restart failed 3 times: ${(lastErr as Error).message.split('\n')[0]}` };
  };
  const done = run().catch(failed);
  restarting.set(kind, done);
  return done;
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
    const exclusive = f.kind === 'redis' || f.kind === 'postgres';
    // PostgreSQL does not go down while ingest is still restarting from its last kill: the
    // outage check judges ingest's answers while PostgreSQL is down, and an ingest that is
    // not there refuses connections. (Other restarts may overlap a Redis or PostgreSQL
    // fault: a service waits for its servers before it is ready. Waiting for them all
    // made the schedule drift past the end of the load in short runs.)
    if (f.kind === 'postgres') await restarting.get('ingest');
    const started = Date.now();
    d.log(`  ${stamp()}  ${exclusive ? `restarting ${f.kind}` : `kill -9 ${f.kind}`}`);
    const logged = inject(d, f.kind, restarting).then(({ ok, detail }) => {
      const recoveredAfterMs = Date.now() - started;
      d.log(`  ${stamp()}  ${ok ? '' : '! '}${detail} (back after ${recoveredAfterMs} ms)`);
      logs.push({ kind: f.kind, plannedAtMs: f.atMs, startedAtMs: started - t0, at: started, recoveredAfterMs, ok, detail });
    });
    running.push(logged);
    // A Redis or PostgreSQL fault is over (the server back) before the next fault begins.
    if (exclusive) await logged;
  }
  await Promise.all(running);
  return logs.sort((a, b) => a.at - b.at);
}
