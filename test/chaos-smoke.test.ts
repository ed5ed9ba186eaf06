// Keeps `pnpm chaos` from rotting: a few hundred events, flaky receivers, one kill -9 each of
// the deliverer, the router and ingest, Redis restarted empty, and PostgreSQL stopped for
// 3 s where a private PostgreSQL cluster can be started here (the harness starts its own,
// as it does its own redis-server: bench/lib/private-postgres.ts); the run must PASS (exit
// 0: nothing acknowledged lost, every planned fault happened) and write its JSON verdict.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopAll } from '../bench/lib/children';
import { startPrivatePostgres } from '../bench/lib/private-postgres';
import { runHarness } from '../bench/lib/run-harness';

jest.setTimeout(150_000);

const dir = mkdtempSync(join(tmpdir(), 'hookline-chaos-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether the harness can start a PostgreSQL cluster of its own here (initdb, server binaries). */
async function privatePostgresStarts(): Promise<boolean> {
  try {
    const pg = await startPrivatePostgres({ database: 'probe' });
    await pg.close();
    return true;
  } catch {
    return false;
  } finally {
    await stopAll();
  }
}

test('a small chaos run with every kind of fault loses nothing, exits 0 and writes its verdict as JSON', async () => {
  const withPostgres = await privatePostgresStarts();
  const faults = `deliverer:1,router:1,ingest:1,redis:1${withPostgres ? ',postgres:1' : ''}`;
  const out = join(dir, 'chaos.json');
  // 720 events at 40/s: an 18 s send window, so that every fault lands while the provider is
  // still sending, even when the other test files slow the restarts down: the PostgreSQL
  // outage check needs requests sent while it is down (else the run is INCOMPLETE).
  // A circuit that opens (ten failures in a row to one destination: the receivers time out
  // more often while the other test files load the two cores) closes again after 1 s, not
  // 30: with the default cooldown its deliveries could still be held back when the settle
  // timeout ran out, and the run reported them as lost.
  const args = ['--events', '720', '--rate', '40', '--faults', faults, '--settle-timeout', '60', '--env', 'DELIVERY_LEASE_MS=5000', '--env', 'BREAKER_COOLDOWN_MS=1000', '--out', out];
  if (!withPostgres) args.push('--no-private-postgres');
  const { code, output } = await runHarness('bench/chaos.ts', args, 140_000);
  expect({ code, tail: code === 0 ? '' : output.slice(-4000) }).toEqual({ code: 0, tail: '' });
  for (const line of ['kill -9 deliverer', 'kill -9 router', 'kill -9 ingest', 'restart Redis empty', '=== pnpm chaos verdict: PASS ===']) expect(output).toContain(line);

  const r = JSON.parse(readFileSync(out, 'utf8'));
  expect(r.kind).toBe('hookline-chaos');
  expect(Object.keys(r)).toEqual(expect.arrayContaining(['machine', 'config', 'faults', 'faultSchedule', 'load', 'quiescence', 'verdict']));
  const kinds = ['deliverer', 'router', 'ingest', 'redis', ...(withPostgres ? ['postgres'] : [])];
  expect(r.faults.map((f: { kind: string }) => f.kind).sort()).toEqual([...kinds].sort());
  expect(r.faults.every((f: { ok: boolean }) => f.ok)).toBe(true);
  expect(r.faultSchedule).toMatchObject({ complete: true, reduced: true, explicit: true, requested: faults, missing: [] });
  expect(r.quiescence.quiescent).toBe(true);
  const v = r.verdict;
  expect(v).toMatchObject({ status: 'PASS', pass: true, failures: [], faultsRan: `router×1, deliverer×1, ingest×1, redis×1${withPostgres ? ', postgres×1' : ''}` });
  expect(v.acknowledgedEvents).toBe(720);
  expect(v.unacknowledgedEvents).toBe(0);
  // fan-outs 1, 2 and 3 round-robin over 720 events: 240 + 480 + 720 deliveries
  expect(v.expectedDeliveries).toBe(1440);
  expect(v.delivered + v.inDlq).toBe(1440);
  expect(v).toMatchObject({ lost: 0, dlqNotGenuine: 0, deliveredNotAcknowledged: 0, phantomDeliveries: 0, requestMismatches: 0, requestsWithoutKey: 0, eventsPerKeyOverOne: 0, dlqApiMatchesDb: true, unexpectedExits: [] });
  expect(v.dlqShare.withinBound).toBe(true);
  if (withPostgres) expect(v.pgOutage).toMatchObject({ outages: 1, exercised: true, not503: 0, okWhileDown: 0, ok: true });
  expect(v.receiverRequests).toBeGreaterThan(1440); // the receivers failed some attempts
  expect(typeof v.duplicateRatePct).toBe('number');
  expect(r.load.attemptLog.length).toBe(r.load.requests);
});
