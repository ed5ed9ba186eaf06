// Keeps `pnpm chaos` from rotting: a few hundred events, flaky receivers and one kill -9 of
// the deliverer, on a private Redis (and a private PostgreSQL where the machine allows);
// the run must exit 0 (nothing acknowledged lost) and write its JSON verdict.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runHarness } from '../bench/lib/run-harness';

jest.setTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), 'hookline-chaos-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('a tiny chaos run loses nothing, exits 0 and writes its verdict as JSON', async () => {
  const out = join(dir, 'chaos.json');
  // A circuit that opens (ten failures in a row to one destination: the receivers time out
  // more often while the other test files load the two cores) closes again after 1 s, not
  // 30: with the default cooldown its deliveries could still be held back when the settle
  // timeout ran out, and the run reported them as lost.
  const args = ['--events', '300', '--rate', '100', '--faults', 'deliverer:1', '--settle-timeout', '60', '--env', 'DELIVERY_LEASE_MS=5000', '--env', 'BREAKER_COOLDOWN_MS=1000', '--out', out];
  const { code, output } = await runHarness('bench/chaos.ts', args, 110_000);
  expect({ code, tail: code === 0 ? '' : output.slice(-3000) }).toEqual({ code: 0, tail: '' });
  expect(output).toContain('kill -9 deliverer');

  const r = JSON.parse(readFileSync(out, 'utf8'));
  expect(r.kind).toBe('hookline-chaos');
  expect(Object.keys(r)).toEqual(expect.arrayContaining(['machine', 'config', 'faults', 'load', 'quiescence', 'verdict']));
  expect(r.faults).toHaveLength(1);
  expect(r.faults[0].kind).toBe('deliverer');
  expect(r.quiescence.quiescent).toBe(true);
  const v = r.verdict;
  expect(v.pass).toBe(true);
  expect(v.acknowledgedEvents).toBe(300);
  // fan-outs 1, 2 and 3 round-robin over 300 events: 100 + 200 + 300 deliveries
  expect(v.expectedDeliveries).toBe(600);
  expect(v.delivered + v.inDlq).toBe(600);
  expect(v.lost).toBe(0);
  expect(v.deliveredNotAcknowledged).toBe(0);
  expect(v.receiverRequests).toBeGreaterThan(600); // the receivers failed some attempts
  expect(typeof v.duplicateRatePct).toBe('number');
});
