// The measurements, the same for Hookline and the baselines: a system under test is a hook
// URL per fan-out plus the processes to watch; the receiver counts what arrives.
//
// Each phase has a tag, carried in every event body it sends, so the receiver counts each
// phase's deliveries apart (a straggler of an earlier phase never counts in a later one)
// and tells duplicates apart by idempotency key. A phase is marked invalid, with its
// reasons, when its figures cannot be trusted: the phase before it did not drain, or an
// earlier phase's deliveries were still arriving during it; its own drain gave up;
// requests were skipped, answered non-2xx or failed; a process of the system exited on its
// own; more distinct deliveries arrived than requests were sent and not refused, × fan-out.
// Targets are never judged from an invalid phase.
import type { LatencySummary } from './histogram';
import type { IpcClient } from './ipc';
import { constantRate, eventBody, gatedLoop, saturate, type GatedResult, type LoadResult } from './load';
import type { Monitor } from './monitor';
import type { PeakWindow, ProcSampler, ProcSummary } from './proc-sampler';
import type { PhaseCounts } from './receiver-tally';
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
  /** How many of its processes exited so far without the harness asking (crashes, OOM kills). */
  unexpectedExits?(): number;
}

/** A phase already run on this system: what the validity of the next ones depends on. */
export interface PhaseRecord {
  tag: string;
  label: string;
  /** null: nothing to drain (the bare baseline delivers nothing). */
  drained: boolean | null;
}

export interface PhaseCtx {
  sut: Sut;
  monitor: Monitor;
  receiver: IpcClient;
  procs: ProcSampler;
  payloadBytes: number;
  drainTimeoutMs: number;
  /** At most this many requests per saturation phase (null: no limit). */
  saturationMax: number | null;
  /** The phases run so far on this system, oldest first (filled by the phases). */
  history: PhaseRecord[];
}

export interface Drain {
  drained: boolean;
  ms: number;
  expected: number;
  /** Distinct deliveries of the phase counted at the receiver. */
  received: number;
}

export interface ReceiverStats extends PhaseCounts {
  latency: LatencySummary;
  missingTimestamp: number;
}

export interface Validity {
  valid: boolean;
  invalidReasons: string[];
}

export interface PhaseResult<L extends LoadResult = LoadResult> extends Validity {
  /** The tag in the phase's event bodies (the receiver's per-phase count). */
  tag: string;
  fanout: number;
  load: L;
  /** Peak RSS over the load (VmHWM reset at its start, see proc-sampler.ts) and CPU. */
  processes: Record<string, ProcSummary>;
  /**
   * End to end: CPU time per delivery by process, in µs (its mean CPU over the phase divided
   * by the deliveries per second): steadier than throughput on a noisy machine, and it
   * says which process the time goes to.
   */
  cpuUsPerDelivery?: Record<string, number>;
  drain?: Drain;
  /** The receiver's counts for this phase's tag, after the drain. */
  receiver?: PhaseCounts;
  /** Deliveries of earlier phases (by label) that arrived during this one. */
  leftovers?: Record<string, number>;
  deliveryLatencyMs?: LatencySummary;
  stagesMs?: StageBreakdown;
  bySecondMs?: SecondOfLatency[];
  /** Latency phases: the unmeasured warm-up before it (its own tag), and whether it drained. */
  warmup?: { tag: string; ok2xx: number; drain: Drain };
}

export interface ValidityInput {
  load: Pick<LoadResult, 'sent' | 'ok2xx' | 'non2xx' | 'errors' | 'skipped'>;
  /** Deliveries per acknowledged event; null when the system delivers nothing. */
  fanout: number | null;
  drain?: Drain;
  /** Distinct deliveries the receiver counted for the phase. */
  counted?: number;
  /** The phase run just before on the same system. */
  previous?: PhaseRecord;
  /** Deliveries of earlier phases that arrived during this one, by label. */
  leftovers?: Record<string, number>;
  /** Deliveries that carried no ingest timestamp (latency phases). */
  missingTimestamp?: number;
  /** Processes of the system that exited on their own during the phase. */
  crashes?: number;
}

/** Whether a phase's figures can be trusted, and why not. */
export function phaseValidity(i: ValidityInput): Validity {
  const reasons: string[] = [];
  if (i.previous && i.previous.drained === false) reasons.push(`the phase before ("${i.previous.label}") did not drain: its backlog weighed on this one`);
  for (const [label, n] of Object.entries(i.leftovers ?? {})) if (n > 0) reasons.push(`${n} deliveries of "${label}" arrived during this phase`);
  if (i.load.ok2xx === 0) reasons.push('no request was acknowledged');
  if (i.load.non2xx > 0) reasons.push(`${i.load.non2xx} requests answered non-2xx`);
  if (i.load.errors > 0) reasons.push(`${i.load.errors} requests failed (connection error or timeout)`);
  if (i.load.skipped > 0) reasons.push(`${i.load.skipped} requests not sent (too many in flight): the offered rate was not held`);
  if (i.crashes) reasons.push(`${i.crashes} process(es) of the system exited on their own`);
  if (i.fanout !== null) {
    if (i.drain && !i.drain.drained) reasons.push(`the drain gave up: ${i.drain.received} of ${i.drain.expected} deliveries arrived`);
    // At most every request not refused: a closed loop stopped at its deadline leaves requests
    // in flight that the system may have accepted (sent, but neither 2xx nor refused).
    const most = (i.load.sent - i.load.non2xx) * i.fanout;
    if (i.counted !== undefined && i.counted > most) reasons.push(`${i.counted} distinct deliveries counted, more than ${i.load.sent - i.load.non2xx} requests not refused × ${i.fanout}`);
  }
  if (i.missingTimestamp) reasons.push(`${i.missingTimestamp} deliveries carried no X-Hookline-Ingested-At`);
  return { valid: reasons.length === 0, invalidReasons: reasons };
}

interface Running {
  tag: string;
  label: string;
  body: string;
  window: PeakWindow;
  previous: PhaseRecord | undefined;
  /** Received counts, at the start, of earlier phases that did not drain. */
  before: Map<PhaseRecord, number>;
  exitsBefore: number;
}

const slug = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

async function phaseCounts(ctx: PhaseCtx, tag: string): Promise<PhaseCounts> {
  return ctx.receiver.call<PhaseCounts>('phase', tag, 5000);
}

async function begin(ctx: PhaseCtx, kind: string, label: string, durationMs: number): Promise<Running> {
  const tag = `${slug(ctx.sut.name)}.${ctx.history.length + 1}.${slug(kind)}`;
  const before = new Map<PhaseRecord, number>();
  for (const p of ctx.history) if (p.drained === false) before.set(p, (await phaseCounts(ctx, p.tag)).received);
  ctx.monitor.setPhase(label, durationMs);
  return { tag, label, body: eventBody(ctx.payloadBytes, tag), window: ctx.procs.window(), previous: ctx.history[ctx.history.length - 1], before, exitsBefore: ctx.sut.unexpectedExits?.() ?? 0 };
}

/** Closes a phase: its receiver counts, the earlier phases' stragglers, its validity; records it for the next. */
async function finish(ctx: PhaseCtx, run: Running, fanout: number, load: LoadResult, d: Drain | undefined, extra: Partial<ValidityInput> = {}): Promise<Validity & { receiver?: PhaseCounts; leftovers?: Record<string, number> }> {
  const leftovers: Record<string, number> = {};
  for (const [p, n] of run.before) {
    const late = (await phaseCounts(ctx, p.tag)).received - n;
    if (late > 0) leftovers[p.label] = late;
  }
  const receiver = ctx.sut.delivers ? await phaseCounts(ctx, run.tag) : undefined;
  const crashes = (ctx.sut.unexpectedExits?.() ?? 0) - run.exitsBefore;
  const v = phaseValidity({ load, fanout: ctx.sut.delivers ? fanout : null, drain: d, counted: receiver?.unique, previous: run.previous, leftovers, crashes, ...extra });
  ctx.history.push({ tag: run.tag, label: run.label, drained: d ? d.drained : null });
  await ctx.receiver.call('forget', run.tag).catch(() => undefined);
  return { ...v, ...(receiver ? { receiver } : {}), ...(Object.keys(leftovers).length ? { leftovers } : {}) };
}

/**
 * Waits until `expected` distinct deliveries of the phase arrived and then none for a second
 * (stragglers: requests still in flight when the generator stopped), or progress stalls
 * for 15 s.
 */
export async function drain(ctx: PhaseCtx, tag: string, expected: number): Promise<Drain> {
  const t0 = Date.now();
  let last = -1;
  let lastMove = Date.now();
  for (;;) {
    const got = (await phaseCounts(ctx, tag)).unique;
    if (got >= expected && got === last && Date.now() - lastMove >= 1000) return { drained: true, ms: lastMove - t0, expected, received: got };
    if (got !== last) {
      last = got;
      lastMove = Date.now();
    }
    if (Date.now() - lastMove > 15_000 || Date.now() - t0 > ctx.drainTimeoutMs) return { drained: false, ms: Date.now() - t0, expected, received: got };
    await new Promise((r) => setTimeout(r, 200));
  }
}

function procsOf(ctx: PhaseCtx, run: Running): Record<string, ProcSummary> {
  const all = run.window.end();
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
  const run = await begin(ctx, `ingest-f${fanout}`, `${ctx.sut.name} ingest saturation, fan-out ${fanout}, ${connections} connections`, durationMs);
  const load = await saturate({ url: ctx.sut.hookUrl(fanout), body: run.body }, connections, durationMs, ctx.saturationMax);
  const processes = procsOf(ctx, run);
  const d = ctx.sut.delivers ? await drain(ctx, run.tag, load.ok2xx * fanout) : undefined;
  return { tag: run.tag, fanout, load, processes, ...(d ? { drain: d } : {}), ...(await finish(ctx, run, fanout, load, d)) };
}

/**
 * Ingest at saturation with the workers stopped: what the ingest tier alone acknowledges
 * when routing and delivery run elsewhere (each tier scales on its own). The workers then
 * start again and the backlog drains, so nothing acknowledged is left behind.
 */
export async function ingestAlonePhase(ctx: PhaseCtx, fanout: number, connections: number, durationMs: number): Promise<PhaseResult> {
  if (!ctx.sut.pauseDownstream) throw new Error(`${ctx.sut.name} cannot stop its workers`);
  const resume = await ctx.sut.pauseDownstream();
  const run = await begin(ctx, `ingest-alone-f${fanout}`, `${ctx.sut.name} ingest alone (workers stopped), fan-out ${fanout}, ${connections} connections`, durationMs);
  let load: LoadResult;
  try {
    load = await saturate({ url: ctx.sut.hookUrl(fanout), body: run.body }, connections, durationMs, ctx.saturationMax);
  } finally {
    await resume();
  }
  const processes = procsOf(ctx, run);
  const d = await drain(ctx, run.tag, load.ok2xx * fanout);
  return { tag: run.tag, fanout, load, processes, drain: d, ...(await finish(ctx, run, fanout, load, d)) };
}

/** End-to-end deliveries per second sustained for the duration, backlog bounded by maxLag. */
export async function e2ePhase(ctx: PhaseCtx, fanout: number, connections: number, durationMs: number, maxLag: number): Promise<PhaseResult<GatedResult>> {
  const run = await begin(ctx, `e2e-f${fanout}`, `${ctx.sut.name} end-to-end, fan-out ${fanout}`, durationMs);
  const load = await gatedLoop({ url: ctx.sut.hookUrl(fanout), body: run.body }, connections, durationMs, fanout, maxLag, async () => (await phaseCounts(ctx, run.tag)).unique);
  const processes = procsOf(ctx, run);
  const d = await drain(ctx, run.tag, load.ok2xx * fanout);
  return { tag: run.tag, fanout, load, processes, cpuUsPerDelivery: cpuPerDelivery(processes, load.deliveredPerS), drain: d, ...(await finish(ctx, run, fanout, load, d)) };
}

/** Ingest->delivered latency at a constant offered rate, measured at the receiver. */
export async function latencyPhase(ctx: PhaseCtx, rate: number, fanout: number, durationMs: number, warmupMs = 0): Promise<PhaseResult> {
  let warmup: PhaseResult['warmup'];
  if (warmupMs > 0) {
    // Same rate, not measured: a freshly started service spends its first seconds compiling
    // hot code and opening connections, which is a start-up cost, not a steady-state latency.
    const w = await begin(ctx, `warmup-${rate}-f${fanout}`, `${ctx.sut.name} warm-up at ${rate}/s, fan-out ${fanout}`, warmupMs);
    const warm = await constantRate({ url: ctx.sut.hookUrl(fanout), body: w.body }, rate, warmupMs);
    w.window.end();
    const d = await drain(ctx, w.tag, warm.ok2xx * fanout);
    await finish(ctx, w, fanout, warm, d);
    warmup = { tag: w.tag, ok2xx: warm.ok2xx, drain: d };
  }
  const run = await begin(ctx, `latency-${rate}-f${fanout}`, `${ctx.sut.name} latency at ${rate}/s, fan-out ${fanout}`, durationMs);
  const from = Date.now();
  const load = await constantRate({ url: ctx.sut.hookUrl(fanout), body: run.body }, rate, durationMs);
  const processes = procsOf(ctx, run);
  const d = await drain(ctx, run.tag, load.ok2xx * fanout);
  const stats = await ctx.receiver.call<ReceiverStats>('stats', run.tag);
  const to = Date.now();
  const stagesMs = await ctx.sut.stages?.(from, to).catch(() => undefined);
  const bySecondMs = await ctx.sut.bySecond?.(from, to).catch(() => undefined);
  const v = await finish(ctx, run, fanout, load, d, { missingTimestamp: stats.missingTimestamp });
  return { tag: run.tag, fanout, load, processes, drain: d, deliveryLatencyMs: stats.latency, ...(warmup ? { warmup } : {}), ...(stagesMs ? { stagesMs } : {}), ...(bySecondMs ? { bySecondMs } : {}), ...v };
}
