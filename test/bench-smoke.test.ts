// Keeps `pnpm bench` from rotting: a tiny run of every system (Hookline, the afternoon
// baseline, the durable floor, the bare HTTP baseline) and every phase (ingest, ingest-alone, the lag-gated
// end-to-end loop, latency), a few seconds each, as a child process: it must exit 0 and
// write a JSON report with every section. It never asserts speed; it asserts that the
// figures are counted right: each phase's deliveries are its own (tagged), never more than
// the requests that were not refused × fan-out, at least the acknowledged ones × fan-out
// once drained, every phase valid, the e2e figure's window stated, ratios in comparable
// units, peak RSS from the kernel's high-water mark where it can be reset.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { runHarness } from '../bench/lib/run-harness';

jest.setTimeout(180_000);

const dir = mkdtempSync(join(tmpdir(), 'hookline-bench-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Phase {
  tag: string;
  fanout: number;
  valid: boolean;
  invalidReasons: string[];
  load: { durationS?: number; sent: number; ok2xx: number; non2xx: number; errors: number; skipped: number; ok2xxPerS: number; delivered?: number; deliveredPerS?: number; windowS?: number; warmupS?: number };
  drain?: { drained: boolean; expected: number; received: number };
  receiver?: { received: number; unique: number; duplicates: number };
  deliveryLatencyMs?: Record<string, number>;
}

const FANOUT = 2;

test('a tiny run of every system and phase exits 0 and counts each phase right', async () => {
  const out = join(dir, 'bench.json');
  const args = ['--quick', '--systems', 'hookline,afternoon,floor,bare', '--phases', 'ingest,ingest-alone,e2e,latency', '--rates', '200', '--fanouts', String(FANOUT)];
  // At most 1,500 events per saturation phase and 2,000 deliveries behind in the end-to-end
  // loop: the backlog left for each drain is bounded, so a slow or busy machine (the test
  // runs beside others) still drains it well within the timeout.
  args.push('--saturation-duration', '2', '--saturation-max', '1500', '--latency-duration', '2', '--connections', '16');
  args.push('--duration', '4', '--e2e-connections', '16', '--max-lag', '2000', '--out', out);
  const { code, output } = await runHarness('bench/run.ts', args, 170_000);
  expect({ code, tail: code === 0 ? '' : output.slice(-3000) }).toEqual({ code: 0, tail: '' });
  expect(output).toContain('pnpm bench summary');
  expect(output).toContain('window s, after warm-up s');

  const r = JSON.parse(readFileSync(out, 'utf8'));
  expect(r.kind).toBe('hookline-bench');
  expect(Object.keys(r)).toEqual(expect.arrayContaining(['startedAt', 'finishedAt', 'machine', 'config', 'hookline', 'baselines', 'ratios', 'ratioCaveats', 'targets']));

  // Every phase of every system, with the properties that make its figures countable.
  const phases = (s: { ingest?: Phase; ingestAlone?: Phase; e2e: Record<string, Phase>; latency: Record<string, Record<string, Phase>> }): Array<[string, Phase]> => [
    ...(s.ingest ? [['ingest', s.ingest] as [string, Phase]] : []),
    ...(s.ingestAlone ? [['ingest-alone', s.ingestAlone] as [string, Phase]] : []),
    ...Object.entries(s.e2e).map(([f, p]) => [`e2e ${f}`, p] as [string, Phase]),
    ...Object.entries(s.latency).flatMap(([rate, byF]) => Object.entries(byF).map(([f, p]) => [`latency ${rate} ${f}`, p] as [string, Phase])),
  ];
  const systems = { hookline: r.hookline, afternoon: r.baselines.afternoon, floor: r.baselines.floor, bare: r.baselines.bare };
  const tags = new Set<string>();
  for (const [system, s] of Object.entries(systems)) {
    for (const [name, p] of phases(s)) {
      const where = `${system} ${name}`;
      expect({ where, valid: p.valid, reasons: p.invalidReasons }).toEqual({ where, valid: true, reasons: [] });
      expect(tags.has(p.tag)).toBe(false); // a tag of its own
      tags.add(p.tag);
      // Events were accepted: otherwise every check of the deliveries below is vacuous.
      expect(p.load.ok2xx).toBeGreaterThan(0);
      if (system === 'bare') continue;
      expect(p.fanout).toBe(FANOUT);
      // Drained: every acknowledged event reached each of its destinations at least once...
      expect(p.drain).toEqual(expect.objectContaining({ drained: true, expected: p.load.ok2xx * FANOUT }));
      expect(p.receiver!.unique).toBeGreaterThanOrEqual(p.load.ok2xx * FANOUT);
      // ...and no more distinct deliveries than requests the system did not refuse (a closed
      // loop stopped at its deadline leaves some in flight that it may have accepted).
      expect(p.receiver!.unique).toBeLessThanOrEqual((p.load.sent - p.load.non2xx) * FANOUT);
      expect(p.receiver!.received).toBe(p.receiver!.unique + p.receiver!.duplicates);
    }
  }

  // End to end, through the lag-gated loop, on Hookline, the afternoon pipeline (whose worker
  // posts with got) and the floor: every request is awaited, so the counts match exactly.
  for (const [system, s] of [['hookline', r.hookline], ['afternoon', r.baselines.afternoon], ['floor', r.baselines.floor]] as const) {
    const e: Phase = s.e2e[`f${FANOUT}`];
    expect({ system, e2e: !!e }).toEqual({ system, e2e: true });
    expect(e.load.deliveredPerS).toBeGreaterThan(0);
    expect(e.load.delivered).toBeLessThanOrEqual(e.load.ok2xx * FANOUT); // counted while sending
    expect(e.receiver!.unique).toBe(e.load.ok2xx * FANOUT);
    // The figure's window is stated: the run after its warm-up, which together make the run.
    expect(e.load.windowS).toBeGreaterThan(0);
    expect(e.load.warmupS).toBeGreaterThan(0);
    expect(Math.abs(e.load.windowS! + e.load.warmupS! - e.load.durationS!)).toBeLessThanOrEqual(0.3);
  }

  const lat: Phase = r.hookline.latency['200'][`f${FANOUT}`];
  expect(lat.deliveryLatencyMs!['count']).toBe(lat.receiver!.unique); // first arrivals of this phase only
  for (const k of ['p50', 'p90', 'p99', 'max']) expect(typeof lat.deliveryLatencyMs![k]).toBe('number');
  const seconds = r.hookline.latency['200'][`f${FANOUT}`].bySecondMs as Array<{ s: number; deliveries: number; p50: number; p99: number; max: number }>;
  expect(seconds.map((x) => x.s)).toEqual([...seconds.map((x) => x.s)].sort((a, b) => a - b));
  expect(seconds.reduce((n, x) => n + x.deliveries, 0)).toBeGreaterThanOrEqual(lat.load.ok2xx * FANOUT);
  for (const x of seconds) expect(x.p50 <= x.p99 && x.p99 <= x.max).toBe(true);
  // With the router and deliverer stopped, then started again: the backlog drains fully.
  expect(r.hookline.ingestAlone.load.sent).toBeLessThanOrEqual(1500);

  // Processes, peaks and where they were read from; the backlog in PostgreSQL and in Redis.
  expect(Object.keys(r.hookline.processes).sort()).toEqual(['api', 'deliverer', 'ingest', 'router']);
  expect(Object.keys(r.baselines.afternoon.processes).sort()).toEqual(['afternoon-server', 'afternoon-worker']);
  expect(Object.keys(r.baselines.floor.processes).sort()).toEqual(['floor-server', 'floor-worker']);
  const hwm = String(r.config.peakRss).startsWith('VmHWM');
  for (const s of Object.values(systems)) {
    expect(s.peakRssFrom).toBe(hwm ? 'vmhwm' : 'sampled');
    for (const p of Object.values(s.processes) as Array<{ peakRssMb: number; lastRssMb: number }>) expect(p.peakRssMb).toBeGreaterThanOrEqual(p.lastRssMb);
  }
  expect(r.config.helpers.runtime).toContain('bundle');
  expect(r.hookline.queueDepths.length).toBeGreaterThan(0);
  expect(r.hookline.queueDepths[0]).toEqual(expect.objectContaining({ route: expect.any(Object), deliver: expect.any(Object) }));
  expect(r.hookline.openWork.length).toBeGreaterThan(0);
  expect(r.hookline.openWork[0]).toEqual(expect.objectContaining({ eventsToRoute: expect.any(Number), openDeliveries: expect.any(Number), queryMs: expect.any(Number) }));

  // Ratios: end to end against the bare server in events/s (deliveries ÷ fan-out).
  const events = r.hookline.e2e[`f${FANOUT}`].load.deliveredPerS / FANOUT;
  expect(r.ratios[`e2e_f${FANOUT}_events_vs_bare_http`]).toBe(Math.round((events / r.baselines.bare.ingest.load.ok2xxPerS) * 100) / 100);
  expect(r.ratios).not.toHaveProperty(`e2e_f${FANOUT}_vs_bare_http`);
  for (const k of ['ingest_vs_bare_http', 'ingest_vs_afternoon', `e2e_f${FANOUT}_vs_afternoon`, 'rss_vs_afternoon', 'ingest_vs_floor', `e2e_f${FANOUT}_vs_floor`, `p99_at_200_f${FANOUT}_vs_floor`]) expect(typeof r.ratios[k]).toBe('number');
  expect(r.ratios['ingest_vs_floor']).toBe(Math.round((r.hookline.ingest.load.ok2xxPerS / r.baselines.floor.ingest.load.ok2xxPerS) * 100) / 100);
  expect(r.ratioCaveats).toEqual({});
  expect(r.config.services.ingest.INGEST_BATCH_MAX).toEqual(expect.any(Number));
  expect(r.config.payloadBytes).toBe(1024);
  expect(r.targets.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['ingest 2xx/s at saturation', 'four services peak RSS MB', expect.stringMatching(/^end-to-end deliveries\/s \(f2, [\d.]+ s window after [\d.]+ s warm-up\)$/)]));
  for (const t of r.targets) expect(t.invalidReasons).toBeUndefined();
  // Each target also says what the durable floor reached on the same measurement.
  const ingestTarget = r.targets.find((t: { name: string }) => t.name === 'ingest 2xx/s at saturation');
  expect(ingestTarget.floor).toEqual({ value: r.baselines.floor.ingest.load.ok2xxPerS, pass: r.baselines.floor.ingest.load.ok2xxPerS >= 10_000 });
  expect(output).toContain('durable floor');
  // The floor cleans up after itself: its schema is gone.
  const pg = new Client({ connectionString: process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' });
  await pg.connect();
  const left = await pg.query("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench_floor_%'").finally(() => pg.end());
  expect(left.rows).toEqual([]);
});
