// Keeps `pnpm bench` from rotting: a tiny run (Hookline and the bare HTTP baseline, a few
// seconds per phase) as a child process must exit 0 and write a JSON report with every
// section. It asserts the shape of the report, never the speed.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runHarness } from '../bench/lib/run-harness';

jest.setTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), 'hookline-bench-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('a tiny bench run exits 0 and writes a report with figures, processes, ratios and targets', async () => {
  const out = join(dir, 'bench.json');
  const args = ['--quick', '--systems', 'hookline,bare', '--phases', 'ingest,ingest-alone,latency', '--rates', '200', '--fanouts', '2'];
  // At most 1,500 events per saturation phase: the backlog left for the drain is bounded, so a
  // slow or busy machine (the test runs beside others) still drains it well within the timeout.
  args.push('--saturation-duration', '2', '--saturation-max', '1500', '--latency-duration', '2', '--connections', '16', '--out', out);
  const { code, output } = await runHarness('bench/run.ts', args, 110_000);
  expect({ code, tail: code === 0 ? '' : output.slice(-3000) }).toEqual({ code: 0, tail: '' });
  expect(output).toContain('pnpm bench summary');

  const r = JSON.parse(readFileSync(out, 'utf8'));
  expect(r.kind).toBe('hookline-bench');
  expect(Object.keys(r)).toEqual(expect.arrayContaining(['startedAt', 'finishedAt', 'machine', 'config', 'hookline', 'baselines', 'ratios', 'targets']));
  expect(r.hookline.ingest.load.ok2xx).toBeGreaterThan(0);
  expect(r.hookline.ingest.drain.received).toBeGreaterThan(0);
  // With the router and deliverer stopped, then started again: the backlog drains fully.
  expect(r.hookline.ingestAlone.load.ok2xx).toBeGreaterThan(0);
  expect(r.hookline.ingestAlone.load.sent).toBeLessThanOrEqual(1500);
  expect(r.hookline.ingestAlone.drain).toEqual(expect.objectContaining({ drained: true, expected: r.hookline.ingestAlone.load.ok2xx * 2 }));
  expect(r.hookline.ingestAlone.drain.received).toBeGreaterThanOrEqual(r.hookline.ingestAlone.load.ok2xx * 2);
  const lat = r.hookline.latency['200'].f2;
  expect(lat.load.offeredPerS).toBe(200);
  // Events were accepted in this phase: otherwise every check of its deliveries below is vacuous.
  expect(lat.load.ok2xx).toBeGreaterThan(0);
  expect(lat.drain.drained).toBe(true);
  expect(lat.deliveryLatencyMs.count).toBeGreaterThanOrEqual(lat.load.ok2xx * 2); // at least once
  for (const k of ['p50', 'p90', 'p99', 'max']) expect(typeof lat.deliveryLatencyMs[k]).toBe('number');
  // By second of the phase, from Hookline's own timestamps: every delivery of the phase, in order.
  const seconds = lat.bySecondMs as Array<{ s: number; deliveries: number; p50: number; p99: number; max: number }>;
  expect(seconds.map((x) => x.s)).toEqual([...seconds.map((x) => x.s)].sort((a, b) => a - b));
  expect(seconds.reduce((n, x) => n + x.deliveries, 0)).toBeGreaterThanOrEqual(lat.load.ok2xx * 2);
  for (const x of seconds) expect(x.p50 <= x.p99 && x.p99 <= x.max).toBe(true);
  expect(Object.keys(r.hookline.processes).sort()).toEqual(['api', 'deliverer', 'ingest', 'router']);
  expect(r.hookline.processes.ingest.peakRssMb).toBeGreaterThan(0);
  expect(r.hookline.queueDepths.length).toBeGreaterThan(0);
  expect(r.hookline.queueDepths[0]).toEqual(expect.objectContaining({ route: expect.any(Object), deliver: expect.any(Object) }));
  expect(r.baselines.bare.ingest.load.ok2xx).toBeGreaterThan(0);
  expect(typeof r.ratios.ingest_vs_bare_http).toBe('number');
  expect(r.config.services.ingest.INGEST_BATCH_MAX).toEqual(expect.any(Number));
  expect(r.config.payloadBytes).toBe(1024);
  expect(r.targets.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['ingest 2xx/s at saturation', 'four services peak RSS MB']));
});
