// The summary: Hookline's figures, the baselines', the ratios between them and the issue's
// targets, as a table on stdout and as JSON on disk.
//
// Honesty rules: a figure from an invalid phase (phases.ts phaseValidity) is printed with
// `!` and its reasons; a target is never judged from one (INVALID); a ratio that involves
// one is still computed but listed with its caveat. End-to-end is compared with the bare
// HTTP server in events/s (deliveries ÷ fan-out), the unit the bare server answers in.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { BacklogSample } from './backlog-sampler';
import { ROOT } from './children';
import type { GatedResult } from './load';
import type { PhaseResult } from './phases';
import type { StatementCost } from './pg-statements';
import type { PeakRssSource, ProcSummary } from './proc-sampler';
import { QueueSampler, type QueueSample } from './queue-sampler';

export interface SystemResults {
  ingest?: PhaseResult;
  /** Ingest at saturation with the workers stopped (`ingest-alone`). */
  ingestAlone?: PhaseResult;
  e2e: Record<string, PhaseResult<GatedResult>>;
  /** latency[rate][`f${fanout}`] */
  latency: Record<string, Record<string, PhaseResult>>;
  /** Over the system's whole measurement (every phase and drain). */
  processes: Record<string, ProcSummary>;
  /** PostgreSQL (all backends) and Redis, when private to the run. */
  servers?: Record<string, ProcSummary>;
  pgTopStatements?: StatementCost[];
  /** Sum of each process's own peak (an upper bound of their simultaneous total). */
  totalPeakRssMb?: number;
  /** How the processes' peaks were read: the kernel's high-water mark, or once-a-second samples. */
  peakRssFrom?: PeakRssSource | 'mixed';
  queueDepths?: QueueSample[];
  /** Hookline: events waiting for routing and open deliveries, counted in PostgreSQL. */
  openWork?: BacklogSample[];
}

export interface Target {
  name: string;
  target: string;
  value: number | null;
  /** null: not judged (no figure, or the figure comes from an invalid phase, see `invalidReasons`). */
  pass: boolean | null;
  invalidReasons?: string[];
  note?: string;
  /** The durable floor's figure for the same measurement (when it ran), and whether it meets the target: can any durable design reach it here? */
  floor?: { value: number | null; pass: boolean | null };
}

export interface BenchReport {
  kind: 'hookline-bench';
  startedAt: string;
  finishedAt: string;
  machine: Record<string, unknown>;
  config: Record<string, unknown>;
  hookline: SystemResults;
  /** floor: baseline (c), absent from reports made before it existed. */
  baselines: { bare: SystemResults; afternoon: SystemResults; floor?: SystemResults };
  ratios: Record<string, number | null>;
  /** Ratios computed from an invalid phase (or from peaks read differently), and why. */
  ratioCaveats: Record<string, string>;
  targets: Target[];
}

export function emptySystem(): SystemResults {
  return { e2e: {}, latency: {}, processes: {} };
}

const ratio = (a: number | undefined, b: number | undefined): number | null => (a !== undefined && b ? Math.round((a / b) * 100) / 100 : null);

/** The fan-out of an end-to-end result (its own field; older reports: from the `f5` key). */
const fanoutOf = (key: string, e: PhaseResult): number => e.fanout ?? Number(key.replace(/^f/, ''));

/** Deliveries per second ÷ fan-out: the events per second the pipeline carried end to end. */
export function e2eEventsPerS(key: string, e: PhaseResult<GatedResult>): number {
  const f = fanoutOf(key, e);
  return f > 0 ? e.load.deliveredPerS / f : e.load.deliveredPerS;
}

/** How a system's peaks were read: one source, or `mixed`. */
export function peakSourceOf(processes: Record<string, ProcSummary>): PeakRssSource | 'mixed' | undefined {
  const sources = new Set(Object.values(processes).map((p) => p.peakRssFrom ?? 'sampled'));
  if (sources.size === 0) return undefined;
  return sources.size === 1 ? [...sources][0] : 'mixed';
}

export function computeRatios(r: Pick<BenchReport, 'hookline' | 'baselines'>): { ratios: Record<string, number | null>; caveats: Record<string, string> } {
  const h = r.hookline, bare = r.baselines.bare, aft = r.baselines.afternoon;
  const ratios: Record<string, number | null> = {};
  const caveats: Record<string, string> = {};
  const put = (key: string, value: number | null, phases: Array<[string, PhaseResult | undefined]>): void => {
    ratios[key] = value;
    const bad = phases.filter(([, p]) => p && !p.valid).map(([who, p]) => `${who} invalid (${p!.invalidReasons.join('; ')})`);
    if (value !== null && bad.length) caveats[key] = bad.join(' / ');
  };
  put('ingest_vs_bare_http', ratio(h.ingest?.load.ok2xxPerS, bare.ingest?.load.ok2xxPerS), [['hookline ingest', h.ingest], ['bare ingest', bare.ingest]]);
  put('ingest_vs_afternoon', ratio(h.ingest?.load.ok2xxPerS, aft.ingest?.load.ok2xxPerS), [['hookline ingest', h.ingest], ['afternoon ingest', aft.ingest]]);
  put('ingest_alone_vs_bare_http', ratio(h.ingestAlone?.load.ok2xxPerS, bare.ingest?.load.ok2xxPerS), [['hookline ingest-alone', h.ingestAlone], ['bare ingest', bare.ingest]]);
  put('ingest_alone_vs_afternoon_alone', ratio(h.ingestAlone?.load.ok2xxPerS, aft.ingestAlone?.load.ok2xxPerS), [['hookline ingest-alone', h.ingestAlone], ['afternoon ingest-alone', aft.ingestAlone]]);
  for (const [f, e] of Object.entries(h.e2e)) {
    const a = aft.e2e[f];
    put(`e2e_${f}_vs_afternoon`, ratio(e.load.deliveredPerS, a?.load.deliveredPerS), [[`hookline e2e ${f}`, e], [`afternoon e2e ${f}`, a]]);
    // The bare server answers requests (one per event): compare events, not deliveries.
    put(`e2e_${f}_events_vs_bare_http`, ratio(e2eEventsPerS(f, e), bare.ingest?.load.ok2xxPerS), [[`hookline e2e ${f}`, e], ['bare ingest', bare.ingest]]);
  }
  for (const [rate, byF] of Object.entries(h.latency))
    for (const [f, l] of Object.entries(byF)) {
      const a = aft.latency[rate]?.[f];
      put(`p99_at_${rate}_${f}_vs_afternoon`, ratio(l.deliveryLatencyMs?.p99, a?.deliveryLatencyMs?.p99), [[`hookline latency ${rate} ${f}`, l], [`afternoon latency ${rate} ${f}`, a]]);
    }
  const floor = r.baselines.floor;
  if (floor) {
    put('ingest_vs_floor', ratio(h.ingest?.load.ok2xxPerS, floor.ingest?.load.ok2xxPerS), [['hookline ingest', h.ingest], ['floor ingest', floor.ingest]]);
    put('ingest_alone_vs_floor_alone', ratio(h.ingestAlone?.load.ok2xxPerS, floor.ingestAlone?.load.ok2xxPerS), [['hookline ingest-alone', h.ingestAlone], ['floor ingest-alone', floor.ingestAlone]]);
    for (const [f, e] of Object.entries(h.e2e)) put(`e2e_${f}_vs_floor`, ratio(e.load.deliveredPerS, floor.e2e[f]?.load.deliveredPerS), [[`hookline e2e ${f}`, e], [`floor e2e ${f}`, floor.e2e[f]]]);
    for (const [rate, byF] of Object.entries(h.latency))
      for (const [f, l] of Object.entries(byF)) {
        const c = floor.latency[rate]?.[f];
        put(`p99_at_${rate}_${f}_vs_floor`, ratio(l.deliveryLatencyMs?.p99, c?.deliveryLatencyMs?.p99), [[`hookline latency ${rate} ${f}`, l], [`floor latency ${rate} ${f}`, c]]);
      }
  }
  put('rss_vs_afternoon', ratio(h.totalPeakRssMb, aft.totalPeakRssMb), []);
  const hs = peakSourceOf(h.processes), as = peakSourceOf(aft.processes);
  if (ratios['rss_vs_afternoon'] !== null && hs !== as) caveats['rss_vs_afternoon'] = `peaks read differently: hookline ${hs}, afternoon ${as}`;
  return { ratios, caveats };
}

export function computeTargets(r: Pick<BenchReport, 'hookline'> & { baselines?: Partial<BenchReport['baselines']> }): Target[] {
  const h = r.hookline;
  const floor = r.baselines?.floor;
  const t: Target[] = [];
  // The same measurement on the durable floor, judged by the same rule (not when its phase is invalid).
  const onFloor = (pick: (s: SystemResults) => [PhaseResult | undefined, number | undefined], pass: (v: number) => boolean): Pick<Target, 'floor'> => {
    if (!floor) return {};
    const [phase, value] = pick(floor);
    return { floor: { value: value ?? null, pass: value === undefined || (phase && !phase.valid) ? null : pass(value) } };
  };
  const check = (name: string, target: string, pick: (s: SystemResults) => [PhaseResult | undefined, number | undefined], pass: (v: number) => boolean): void => {
    const [phase, value] = pick(h);
    const f = onFloor(pick, pass);
    if (value === undefined) return void t.push({ name, target, value: null, pass: null, ...f });
    if (phase && !phase.valid) return void t.push({ name, target, value, pass: null, invalidReasons: phase.invalidReasons, ...f });
    t.push({ name, target, value, pass: pass(value), ...f });
  };
  check('ingest 2xx/s at saturation', '>= 10000', (s) => [s.ingest, s.ingest?.load.ok2xxPerS], (v) => v >= 10_000);
  for (const [f, e] of Object.entries(h.e2e)) check(`end-to-end deliveries/s (${f}, ${e.load.windowS} s window after ${e.load.warmupS ?? '?'} s warm-up)`, '>= 10000', (s) => [s.e2e[f], s.e2e[f]?.load.deliveredPerS], (v) => v >= 10_000);
  for (const f of Object.keys(h.latency['1000'] ?? {})) check(`p99 ms at 1000/s (${f})`, '<= 25', (s) => [s.latency['1000']?.[f], s.latency['1000']?.[f]?.deliveryLatencyMs?.p99], (v) => v <= 25);
  const rss = h.totalPeakRssMb;
  const src = peakSourceOf(h.processes);
  if (rss !== undefined && src !== 'vmhwm') {
    // Once-a-second samples miss short peaks: a figure under the target proves nothing.
    t.push({ name: 'four services peak RSS MB', target: '<= 600', value: rss, pass: rss > 600 ? false : null, note: `peak from ${src} readings (VmHWM could not be reset for every process): a lower bound` });
  } else check('four services peak RSS MB', '<= 600', (s) => [undefined, s.totalPeakRssMb], (v) => v <= 600);
  return t;
}

/** Every phase of a system, with a name for the listing. */
export function phasesOf(s: SystemResults): Array<[string, PhaseResult]> {
  const out: Array<[string, PhaseResult]> = [];
  if (s.ingest) out.push(['ingest', s.ingest]);
  for (const [f, e] of Object.entries(s.e2e)) out.push([`e2e ${f}`, e]);
  for (const [rate, byF] of Object.entries(s.latency)) for (const [f, l] of Object.entries(byF)) out.push([`latency ${rate}/s ${f}`, l]);
  if (s.ingestAlone) out.push(['ingest-alone', s.ingestAlone]);
  return out;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

const n = (v: number | undefined | null): string => (v === undefined || v === null ? '-' : v.toLocaleString('en-US'));
/** A figure, marked `!` when its phase is invalid. */
const fig = (v: number | undefined | null, p: PhaseResult | undefined): string => (v === undefined || v === null ? '-' : `${n(v)}${p && p.valid === false ? ' !' : ''}`);
const PEAK_FROM: Record<string, string> = { vmhwm: 'VmHWM', 'vmhwm-sum': 'VmHWM sum', sampled: 'sampled 1/s', mixed: 'mixed' };

export function printSummary(r: BenchReport): void {
  const sys: Array<[string, SystemResults]> = [['hookline', r.hookline], ['afternoon', r.baselines.afternoon], ...(r.baselines.floor ? [['durable floor', r.baselines.floor] as [string, SystemResults]] : []), ['bare http', r.baselines.bare]];
  const rows: string[][] = [['figure', ...sys.map(([s]) => s)]];
  rows.push(['ingest 2xx/s (saturation)', ...sys.map(([, s]) => fig(s.ingest?.load.ok2xxPerS, s.ingest))]);
  rows.push(['ingest ack p99 ms (saturation)', ...sys.map(([, s]) => fig(s.ingest?.load.ackLatencyMs.p99, s.ingest))]);
  if (sys.some(([, s]) => s.ingestAlone)) {
    rows.push(['ingest 2xx/s, workers stopped', ...sys.map(([, s]) => fig(s.ingestAlone?.load.ok2xxPerS, s.ingestAlone))]);
    rows.push(['  ack p99 ms, workers stopped', ...sys.map(([, s]) => fig(s.ingestAlone?.load.ackLatencyMs.p99, s.ingestAlone))]);
  }
  const e2eKeys = [...new Set(sys.flatMap(([, s]) => Object.keys(s.e2e)))];
  const latKeys = [...new Set(sys.flatMap(([, s]) => Object.entries(s.latency).flatMap(([rate, byF]) => Object.keys(byF).map((f) => `${rate} ${f}`))))];
  for (const f of e2eKeys) {
    // The figure is the mean over the run after its warm-up, not over the whole --duration.
    rows.push([`end-to-end deliveries/s (${f}), mean over window`, ...sys.map(([, s]) => fig(s.e2e[f]?.load.deliveredPerS, s.e2e[f]))]);
    rows.push(['  window s, after warm-up s', ...sys.map(([, s]) => (s.e2e[f] ? `${s.e2e[f].load.windowS} after ${s.e2e[f].load.warmupS ?? '?'}` : '-'))]);
  }
  for (const key of latKeys) {
    const [rate = '', f = ''] = key.split(' ');
    rows.push([`latency ms at ${rate}/s ${f} p50/p90/p99/max`, ...sys.map(([, s]) => {
      const p = s.latency[rate]?.[f];
      const l = p?.deliveryLatencyMs;
      return l ? `${l.p50}/${l.p90}/${l.p99}/${l.max}${p.valid === false ? ' !' : ''}` : '-';
    })]);
  }
  rows.push(['duplicate deliveries (all phases)', ...sys.map(([, s]) => (phasesOf(s).some(([, p]) => p.receiver) ? n(phasesOf(s).reduce((a, [, p]) => a + (p.receiver?.duplicates ?? 0), 0)) : '-'))]);
  rows.push(['peak RSS MB, all processes', ...sys.map(([, s]) => n(s.totalPeakRssMb))]);
  rows.push(['  peak RSS read from', ...sys.map(([, s]) => (s.peakRssFrom ? (PEAK_FROM[s.peakRssFrom] ?? s.peakRssFrom) : '-'))]);
  const poolNote = sys.some(([, s]) => s.queueDepths?.some((q) => q.pools)) ? '+pools' : '';
  rows.push([`peak jobs waiting (route+deliver${poolNote})`, ...sys.map(([, s]) => (s.queueDepths?.length ? n(Math.max(...s.queueDepths.map((q) => QueueSampler.backlog(q)))) : '-'))]);
  const peakOf = (s: SystemResults, k: 'eventsToRoute' | 'openDeliveries'): string => {
    if (!s.openWork?.length) return '-';
    const top = s.openWork.reduce((a, x) => (x[k] > a[k] ? x : a));
    return `${n(top[k])}${top.capped ? '+' : ''}`;
  };
  rows.push(['peak events to route (PostgreSQL)', ...sys.map(([, s]) => peakOf(s, 'eventsToRoute'))]);
  rows.push(['peak open deliveries (PostgreSQL)', ...sys.map(([, s]) => peakOf(s, 'openDeliveries'))]);
  console.log(`\n=== pnpm bench summary (${r.machine['cpus']} cores, ${r.machine['note']}) ===\n`);
  console.log(table(rows));
  const invalid = sys.flatMap(([name, s]) => phasesOf(s).filter(([, p]) => p.valid === false).map(([k, p]) => `  ${name} ${k}: ${p.invalidReasons.join('; ')}`));
  if (invalid.length) console.log(`\n! invalid phases (their figures are not judged against targets):\n${invalid.join('\n')}`);
  else console.log('\nevery phase valid (drained, nothing skipped, every request answered 2xx, no straggler of an earlier phase)');
  for (const [rate, byF] of Object.entries(r.hookline.latency))
    for (const [f, l] of Object.entries(byF)) {
      if (!l.stagesMs) continue;
      console.log(`\nHookline at ${rate}/s ${f}, where the time went (ms p50/p90/p99, from PostgreSQL timestamps):`);
      for (const [stage, v] of Object.entries(l.stagesMs)) console.log(`  ${stage.padEnd(46)} ${v.p50}/${v.p90}/${v.p99}`);
      if (l.bySecondMs?.length) console.log(`  p99 received→delivered by second of the phase: ${l.bySecondMs.map((x) => x.p99).join(' ')}`);
    }
  for (const [name, s] of sys)
    for (const [f, e] of Object.entries(s.e2e)) {
      const cpu = e.cpuUsPerDelivery;
      if (!cpu || cpu['total'] === undefined) continue;
      const parts = Object.entries(cpu).filter(([p]) => p !== 'total').sort((a, b) => b[1] - a[1]);
      console.log(`\n${name} end to end ${f}, CPU µs per delivery: ${n(cpu['total'])} (${parts.map(([p, v]) => `${p} ${n(v)}`).join(', ')})`);
    }
  const procRows = [['process', 'peak RSS MB', 'peak from', 'mean CPU %', 'peak CPU %']];
  for (const [, s] of sys) for (const [p, v] of Object.entries(s.processes)) procRows.push([p, n(v.peakRssMb), PEAK_FROM[v.peakRssFrom ?? 'sampled'] ?? '', n(v.meanCpuPct), n(v.peakCpuPct)]);
  for (const [name, s] of sys) for (const [p, v] of Object.entries(s.servers ?? {})) procRows.push([`${p} (during ${name})`, '-', '', n(v.meanCpuPct), n(v.peakCpuPct)]);
  console.log(`\n${table(procRows)}`);
  const top = r.hookline.pgTopStatements;
  if (top?.length) {
    console.log('\nPostgreSQL time by statement (pg_stat_statements, Hookline phases):');
    const planned = top.some((q) => q.planMeanMs > 0);
    const plan = (q: StatementCost): string => (planned ? `  ${String(q.planMeanMs).padStart(7)} ms plan` : '');
    for (const q of top) console.log(`  ${String(q.sharePct).padStart(5)} %  ${n(q.calls).padStart(9)} calls  ${String(q.meanMs).padStart(8)} ms${plan(q)}  ${String(q.rowsPerCall).padStart(6)} rows  ${q.query.slice(0, 110)}`);
  }
  const caveats = r.ratioCaveats ?? {};
  console.log(`\nratios: ${Object.entries(r.ratios).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}${caveats[k] ? ' !' : ''}`).join('  ')}`);
  for (const [k, why] of Object.entries(caveats)) console.log(`  ! ${k}: ${why}`);
  console.log('\ntargets:');
  for (const t of r.targets) {
    const mark = t.invalidReasons ? 'INVALID' : t.pass === null ? '   -   ' : t.pass ? ' PASS  ' : ' MISS  ';
    const floorSays = t.floor ? ` — durable floor: ${n(t.floor.value)}${t.floor.pass === null ? '' : t.floor.pass ? ' (meets it)' : ' (misses it too)'}` : '';
    console.log(`  ${mark}  ${t.name}: ${n(t.value)} (target ${t.target})${t.invalidReasons ? ` — not judged: ${t.invalidReasons.join('; ')}` : ''}${t.note ? ` — ${t.note}` : ''}${floorSays}`);
  }
}

export function writeReport(r: { startedAt: string }, out: string | null, prefix = ''): string {
  const stamp = r.startedAt.replace(/[:.]/g, '-');
  const file = resolve(out ?? resolve(ROOT, 'bench/results', `${prefix}${stamp}.json`));
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(r, null, 2));
  return file;
}
