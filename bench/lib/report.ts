// The summary: Hookline's figures, the baselines', the ratios between them and the issue's
// targets, as a table on stdout and as JSON on disk.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ROOT } from './children';
import type { GatedResult } from './load';
import type { PhaseResult } from './phases';
import type { StatementCost } from './pg-statements';
import type { ProcSummary } from './proc-sampler';
import { QueueSampler, type QueueSample } from './queue-sampler';

export interface SystemResults {
  ingest?: PhaseResult;
  /** Ingest at saturation with the workers stopped (`ingest-alone`). */
  ingestAlone?: PhaseResult;
  e2e: Record<string, PhaseResult<GatedResult>>;
  /** latency[rate][`f${fanout}`] */
  latency: Record<string, Record<string, PhaseResult>>;
  processes: Record<string, ProcSummary>;
  /** PostgreSQL (all backends) and Redis, when private to the run. */
  servers?: Record<string, ProcSummary>;
  pgTopStatements?: StatementCost[];
  totalPeakRssMb?: number;
  queueDepths?: QueueSample[];
}

export interface BenchReport {
  kind: 'hookline-bench';
  startedAt: string;
  finishedAt: string;
  machine: Record<string, unknown>;
  config: Record<string, unknown>;
  hookline: SystemResults;
  baselines: { bare: SystemResults; afternoon: SystemResults };
  ratios: Record<string, number | null>;
  targets: Array<{ name: string; target: string; value: number | null; pass: boolean | null }>;
}

export function emptySystem(): SystemResults {
  return { e2e: {}, latency: {}, processes: {} };
}

const ratio = (a: number | undefined, b: number | undefined): number | null => (a !== undefined && b ? Math.round((a / b) * 100) / 100 : null);

export function computeRatios(r: BenchReport): Record<string, number | null> {
  const h = r.hookline, bare = r.baselines.bare, aft = r.baselines.afternoon;
  const out: Record<string, number | null> = {
    'ingest_vs_bare_http': ratio(h.ingest?.load.ok2xxPerS, bare.ingest?.load.ok2xxPerS),
    'ingest_vs_afternoon': ratio(h.ingest?.load.ok2xxPerS, aft.ingest?.load.ok2xxPerS),
    'ingest_alone_vs_bare_http': ratio(h.ingestAlone?.load.ok2xxPerS, bare.ingest?.load.ok2xxPerS),
    'ingest_alone_vs_afternoon_alone': ratio(h.ingestAlone?.load.ok2xxPerS, aft.ingestAlone?.load.ok2xxPerS),
  };
  for (const [f, e] of Object.entries(h.e2e)) {
    out[`e2e_${f}_vs_afternoon`] = ratio(e.load.deliveredPerS, aft.e2e[f]?.load.deliveredPerS);
    out[`e2e_${f}_vs_bare_http`] = ratio(e.load.deliveredPerS, bare.ingest?.load.ok2xxPerS);
  }
  for (const [rate, byF] of Object.entries(h.latency))
    for (const [f, l] of Object.entries(byF)) out[`p99_at_${rate}_${f}_vs_afternoon`] = ratio(l.deliveryLatencyMs?.p99, aft.latency[rate]?.[f]?.deliveryLatencyMs?.p99);
  out['rss_vs_afternoon'] = ratio(h.totalPeakRssMb, aft.totalPeakRssMb);
  return out;
}

export function computeTargets(r: BenchReport): BenchReport['targets'] {
  const h = r.hookline;
  const t: BenchReport['targets'] = [];
  const check = (name: string, target: string, value: number | undefined, pass: (v: number) => boolean): void => {
    t.push({ name, target, value: value ?? null, pass: value === undefined ? null : pass(value) });
  };
  check('ingest 2xx/s at saturation', '>= 10000', h.ingest?.load.ok2xxPerS, (v) => v >= 10_000);
  for (const [f, e] of Object.entries(h.e2e)) check(`end-to-end deliveries/s (${f})`, '>= 10000', e.load.deliveredPerS, (v) => v >= 10_000);
  for (const [f, l] of Object.entries(h.latency['1000'] ?? {})) check(`p99 ms at 1000/s (${f})`, '<= 25', l.deliveryLatencyMs?.p99, (v) => v <= 25);
  check('four services peak RSS MB', '<= 600', h.totalPeakRssMb, (v) => v <= 600);
  return t;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

const n = (v: number | undefined | null): string => (v === undefined || v === null ? '-' : v.toLocaleString('en-US'));

export function printSummary(r: BenchReport): void {
  const sys: Array<[string, SystemResults]> = [['hookline', r.hookline], ['afternoon', r.baselines.afternoon], ['bare http', r.baselines.bare]];
  const rows: string[][] = [['figure', ...sys.map(([s]) => s)]];
  rows.push(['ingest 2xx/s (saturation)', ...sys.map(([, s]) => n(s.ingest?.load.ok2xxPerS))]);
  rows.push(['ingest ack p99 ms (saturation)', ...sys.map(([, s]) => n(s.ingest?.load.ackLatencyMs.p99))]);
  if (sys.some(([, s]) => s.ingestAlone)) {
    rows.push(['ingest 2xx/s, workers stopped', ...sys.map(([, s]) => n(s.ingestAlone?.load.ok2xxPerS))]);
    rows.push(['  ack p99 ms, workers stopped', ...sys.map(([, s]) => n(s.ingestAlone?.load.ackLatencyMs.p99))]);
  }
  const e2eKeys = [...new Set(sys.flatMap(([, s]) => Object.keys(s.e2e)))];
  const latKeys = [...new Set(sys.flatMap(([, s]) => Object.entries(s.latency).flatMap(([rate, byF]) => Object.keys(byF).map((f) => `${rate} ${f}`))))];
  for (const f of e2eKeys) rows.push([`end-to-end deliveries/s (${f})`, ...sys.map(([, s]) => n(s.e2e[f]?.load.deliveredPerS))]);
  for (const key of latKeys) {
    const [rate = '', f = ''] = key.split(' ');
    rows.push([`latency ms at ${rate}/s ${f} p50/p90/p99/max`, ...sys.map(([, s]) => {
      const l = s.latency[rate]?.[f]?.deliveryLatencyMs;
      return l ? `${l.p50}/${l.p90}/${l.p99}/${l.max}` : '-';
    })]);
  }
  rows.push(['peak RSS MB, all processes', ...sys.map(([, s]) => n(s.totalPeakRssMb))]);
  rows.push(['peak jobs waiting (route+deliver)', ...sys.map(([, s]) => (s.queueDepths?.length ? n(Math.max(...s.queueDepths.map((q) => QueueSampler.backlog(q)))) : '-'))]);
  console.log(`\n=== pnpm bench summary (${r.machine['cpus']} cores, ${r.machine['note']}) ===\n`);
  console.log(table(rows));
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
  const procRows = [['process', 'peak RSS MB', 'mean CPU %', 'peak CPU %']];
  for (const [, s] of sys) for (const [p, v] of Object.entries(s.processes)) procRows.push([p, n(v.peakRssMb), n(v.meanCpuPct), n(v.peakCpuPct)]);
  for (const [name, s] of sys) for (const [p, v] of Object.entries(s.servers ?? {})) procRows.push([`${p} (during ${name})`, '-', n(v.meanCpuPct), n(v.peakCpuPct)]);
  console.log(`\n${table(procRows)}`);
  const top = r.hookline.pgTopStatements;
  if (top?.length) {
    console.log('\nPostgreSQL time by statement (pg_stat_statements, Hookline phases):');
    const planned = top.some((q) => q.planMeanMs > 0);
    const plan = (q: StatementCost): string => (planned ? `  ${String(q.planMeanMs).padStart(7)} ms plan` : '');
    for (const q of top) console.log(`  ${String(q.sharePct).padStart(5)} %  ${n(q.calls).padStart(9)} calls  ${String(q.meanMs).padStart(8)} ms${plan(q)}  ${String(q.rowsPerCall).padStart(6)} rows  ${q.query.slice(0, 110)}`);
  }
  console.log(`\nratios: ${Object.entries(r.ratios).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`).join('  ')}`);
  console.log('\ntargets:');
  for (const t of r.targets) console.log(`  ${t.pass === null ? '  -  ' : t.pass ? ' PASS' : ' MISS'}  ${t.name}: ${n(t.value)} (target ${t.target})`);
}

export function writeReport(r: { startedAt: string }, out: string | null, prefix = ''): string {
  const stamp = r.startedAt.replace(/[:.]/g, '-');
  const file = resolve(out ?? resolve(ROOT, 'bench/results', `${prefix}${stamp}.json`));
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(r, null, 2));
  return file;
}
