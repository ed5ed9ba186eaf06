// The measurements, the same for Hookline and the baselines: a system under test is a hook
// URL per fan-out plus the processes to watch; the receiver counts what arrives.
import type { LatencySummary } from './histogram';
import type { IpcClient } from './ipc';
import { constantRate, gatedLoop, saturate, type GatedResult, type LoadResult } from './load';
import type { Monitor } from './monitor';
import type { ProcSampler, ProcSummary } from './proc-sampler';
import type { SecondOfLatency, StageBreakdown } from './stage-breakdown';

export interface Sut {
  name: string;
  /** Where to post events for a given fan-out. */
  hookUrl(fanout: number): string;
  /** False for the bare HTTP baseline, which delivers nothing. */
  delivers: boolean;
  /** Names (in the sampler) of this system's processes. */
  processes: string[];
  /** Where the time went for events received in [from, to) (Hookline only). */
  stages?(from: number, to: number): Promise<StageBreakdown>;
  /** Received→delivered per second of the phase (from the system's own timestamps). */
  bySecond?(from: number, to: number): Promise<SecondOfLatency[]>;
  /** Stops every process after the ingest tier (the workers); resolves to a function that starts them again. */
  pauseDownstream?(): Promise<() => Promise<void>>;
}

export interface PhaseCtx {
  sut: Sut;
  monitor: Monitor;
  receiver: IpcClient;
  procs: ProcSampler;
  body: string;
  drainTimeoutMs: number;
  /** At most this many requests per saturation phase (null: no limit). */
  saturationMax: number | null;
}

export interface Drain {
  drained: boolean;
  ms: number;
  expected: number;
  received: number;
}

interface ReceiverStats {
  count: number;
  latency: LatencySummary;
  missingTimestamp: number;
}

export interface PhaseResult<L extends LoadResult = LoadResult> {
  load: L;
  processes: Record<string, ProcSummary>;
  /**
   * End to end: CPU time per delivery by process, in µs (its mean CPU over the phase divided
   * by the deliveries per second): steadier than throughput on a noisy machine, and it
   * says which process the time goes to.
   */
  cpuUsPerDelivery?: Record<string, number>;
  drain?: Drain;
  deliveryLatencyMs?: LatencySummary;
  stagesMs?: StageBreakdown;
  bySecondMs?: SecondOfLatency[];
}

/**
 * Waits until `expected` more deliveries than `base` arrived and then none for a second
 * (stragglers: requests still in flight when the generator stopped), or progress stalls
 * for 15 s.
 */
export async function drain(ctx: PhaseCtx, base: number, expected: number): Promise<Drain> {
  const t0 = Date.now();
  let last = -1;
  let lastMove = Date.now();
  for (;;) {
    const got = (await ctx.monitor.delivered()) - base;
    if (got >= expected && got === last && Date.now() - lastMove >= 1000) return { drained: true, ms: lastMove - t0, expected, received: got };
    if (got !== last) {
      last = got;
      lastMove = Date.now();
    }
    if (Date.now() - lastMove > 15_000 || Date.now() - t0 > ctx.drainTimeoutMs) return { drained: false, ms: Date.now() - t0, expected, received: got };
    await new Promise((r) => setTimeout(r, 200));
  }
}

function procsOf(ctx: PhaseCtx, from: number): Record<string, ProcSummary> {
  const all = ctx.procs.summary(from, Date.now());
  const shared = ['generator', 'receiver', 'postgres', 'redis'];
  return Object.fromEntries(Object.entries(all).filter(([n]) => ctx.sut.processes.includes(n) || shared.includes(n)));
}

/** µs of CPU per delivery by process, and their `total`; empty when nothing was delivered. */
export function cpuPerDelivery(processes: Record<string, ProcSummary>, deliveredPerS: number): Record<string, number> {
  if (!(deliveredPerS > 0)) return {};
  const out: Record<string, number> = {};
  let total = 0;
  for (const [name, p] of Object.entries(processes)) {
    const us = Math.round((p.meanCpuPct * 10_000) / deliveredPerS);
    out[name] = us;
    total += us;
  }
  return { ...out, total };
}

/** Ingest at saturation: 2xx per second with `connections` keep-alive connections. */
export async function ingestPhase(ctx: PhaseCtx, fanout: number, connections: number, durationMs: number): Promise<PhaseResult> {
  ctx.monitor.setPhase(`${ctx.sut.name} ingest saturation, fan-out ${fanout}, ${connections} connections`, durationMs);
  const base = await ctx.monitor.delivered();
  const from = Date.now();
  const load = await saturate({ url: ctx.sut.hookUrl(fanout), body: ctx.body }, connections, durationMs, ctx.saturationMax);
  const processes = procsOf(ctx, from);
  const result: PhaseResult = { load, processes };
  if (ctx.sut.delivers) result.drain = await drain(ctx, base, load.ok2xx * fanout);
  return result;
}

/**
 * Ingest at saturation with the workers stopped: what the ingest tier alone acknowledges
 * when routing and delivery run elsewhere (each tier scales on its own). The workers then
 * start again and the backlog drains, so nothing acknowledged is left behind.
 */
export async function ingestAlonePhase(ctx: PhaseCtx, fanout: number, connections: number, durationMs: number): Promise<PhaseResult> {
  if (!ctx.sut.pauseDownstream) throw new Error(`${ctx.sut.name} cannot stop its workers`);
  const base = await ctx.monitor.delivered();
  const resume = await ctx.sut.pauseDownstream();
  ctx.monitor.setPhase(`${ctx.sut.name} ingest alone (workers stopped), fan-out ${fanout}, ${connections} connections`, durationMs);
  const from = Date.now();
  let load: LoadResult;
  try {
    load = await saturate({ url: ctx.sut.hookUrl(fanout), body: ctx.body }, connections, durationMs, ctx.saturationMax);
  } finally {
    await resume();
  }
  return { load, processes: procsOf(ctx, from), drain: await drain(ctx, base, load.ok2xx * fanout) };
}

/** End-to-end deliveries per second sustained for the duration, backlog bounded by maxLag. */
export async function e2ePhase(ctx: PhaseCtx, fanout: number, connections: number, durationMs: number, maxLag: number): Promise<PhaseResult<GatedResult>> {
  ctx.monitor.setPhase(`${ctx.sut.name} end-to-end, fan-out ${fanout}`, durationMs);
  const base = await ctx.monitor.delivered();
  const from = Date.now();
  const load = await gatedLoop({ url: ctx.sut.hookUrl(fanout), body: ctx.body }, connections, durationMs, fanout, maxLag, () => ctx.monitor.delivered());
  const processes = procsOf(ctx, from);
  return { load, processes, cpuUsPerDelivery: cpuPerDelivery(processes, load.deliveredPerS), drain: await drain(ctx, base, load.ok2xx * fanout) };
}

/** Ingest->delivered latency at a constant offered rate, measured at the receiver. */
export async function latencyPhase(ctx: PhaseCtx, rate: number, fanout: number, durationMs: number, warmupMs = 0): Promise<PhaseResult> {
  if (warmupMs > 0) {
    // Same rate, not measured: a freshly started service spends its first seconds compiling
    // hot code and opening connections, which is a start-up cost, not a steady-state latency.
    ctx.monitor.setPhase(`${ctx.sut.name} warm-up at ${rate}/s, fan-out ${fanout}`, warmupMs);
    const base = await ctx.monitor.delivered();
    const warm = await constantRate({ url: ctx.sut.hookUrl(fanout), body: ctx.body }, rate, warmupMs);
    await drain(ctx, base, warm.ok2xx * fanout);
  }
  ctx.monitor.setPhase(`${ctx.sut.name} latency at ${rate}/s, fan-out ${fanout}`, durationMs);
  await ctx.receiver.call('reset');
  const base = await ctx.monitor.delivered();
  const from = Date.now();
  const load = await constantRate({ url: ctx.sut.hookUrl(fanout), body: ctx.body }, rate, durationMs);
  const processes = procsOf(ctx, from);
  const d = await drain(ctx, base, load.ok2xx * fanout);
  const stats = await ctx.receiver.call<ReceiverStats>('stats');
  const to = Date.now();
  const stagesMs = await ctx.sut.stages?.(from, to).catch(() => undefined);
  const bySecondMs = await ctx.sut.bySecond?.(from, to).catch(() => undefined);
  return { load, processes, drain: d, deliveryLatencyMs: stats.latency, ...(stagesMs ? { stagesMs } : {}), ...(bySecondMs ? { bySecondMs } : {}) };
}
