// Destination protection shared through Redis: circuit breaker, automatic disabling,
// per-destination rate limit.
import { createRedis, readDestinationHealthState } from '@hookline/queues';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { takeRateTokens } from '@hookline/delivery';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
const receivers: Receiver[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * The circuit's cooldown: long enough that the steps run while the circuit is open (a few
 * database and Redis round trips) finish inside it with seconds to spare on a loaded machine.
 */
const COOLDOWN_MS = 4000;

beforeAll(async () => {
  h = await createHarness('dlvprotect', { BREAKER_FAILURE_THRESHOLD: '3', BREAKER_COOLDOWN_MS: String(COOLDOWN_MS) });
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

async function flakyReceiver(): Promise<{ rx: Receiver; setFailing(v: boolean): void }> {
  let failing = true;
  const rx = await startReceiver(() => ({ status: failing ? 503 : 200 }));
  receivers.push(rx);
  return { rx, setFailing: (v) => (failing = v) };
}

test('the circuit opens after a run of failures, holds deliveries without using attempts, probes once, closes on success', async () => {
  const { rx, setFailing } = await flakyReceiver();
  // Long retries so that only the deliveries this test runs reach the receiver.
  const dst = await h.destination(rx.url, { config: { retry_schedule_ms: [60_000], max_attempts: 10 } });
  const first = await Promise.all([1, 2, 3].map(() => h.delivery(dst.id)));
  expect(await h.run(first.map((d) => d.deliveryId))).toMatchObject({ failed: 3 });

  const open = await readDestinationHealthState(h.redis, h.prefix, dst.id);
  expect(open).toMatchObject({ state: 'open', consecutiveFailures: 3 });
  expect(open.lastError).toMatch(/http_error/);
  expect(open.openedAt).toBeInstanceOf(Date);

  // While open: not sent, attempt not consumed, due again when the cooldown ends.
  const held = await h.delivery(dst.id);
  const other = await h.delivery(dst.id);
  expect(await h.run([held.deliveryId])).toMatchObject({ claimed: 1, deferred: 1 });
  expect(rx.requests).toHaveLength(3);
  const row = await h.row(held.deliveryId);
  expect(row).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });
  // Due when the cooldown ends, not before; the delay (next_attempt_at less updated_at, one
  // statement's now()) runs to the end of the cooldown, not a whole cooldown from the release.
  // Exact bounds, whatever time the steps in between took.
  expect(row.next_attempt_at.getTime()).toBeGreaterThanOrEqual(open.openedAt!.getTime() + COOLDOWN_MS);
  expect(row.next_attempt_at.getTime() - row.updated_at.getTime()).toBeLessThan(COOLDOWN_MS);

  // After the cooldown one probe goes; it fails, so the circuit opens again.
  await sleep(Math.max(0, open.openedAt!.getTime() + COOLDOWN_MS + 50 - Date.now()));
  expect(await h.run([held.deliveryId, other.deliveryId])).toMatchObject({ claimed: 2, deferred: 1, failed: 1 });
  expect(rx.requests).toHaveLength(4);
  const reopened = await readDestinationHealthState(h.redis, h.prefix, dst.id);
  expect(reopened.state).toBe('open');
  expect(reopened.openedAt!.getTime()).toBeGreaterThan(open.openedAt!.getTime());

  // The destination recovers: the next probe succeeds and the circuit closes.
  setFailing(false);
  await sleep(Math.max(0, reopened.openedAt!.getTime() + COOLDOWN_MS + 50 - Date.now()));
  const probe = (await h.row(held.deliveryId)).attempt_count === 1 ? other : held;
  expect(await h.run([probe.deliveryId])).toMatchObject({ delivered: 1 });
  expect(await readDestinationHealthState(h.redis, h.prefix, dst.id)).toMatchObject({ state: 'closed', consecutiveFailures: 0, failingSince: null });
  const rest = await h.delivery(dst.id);
  expect(await h.run([rest.deliveryId])).toMatchObject({ delivered: 1 });
});

test('a destination failing without a success for DESTINATION_DISABLE_AFTER_MS is disabled, visibly', async () => {
  const { rx } = await flakyReceiver();
  const dst = await h.destination(rx.url, { config: { retry_schedule_ms: [60_000] } });
  const quick = h.replica({ DESTINATION_DISABLE_AFTER_MS: '300', BREAKER_FAILURE_THRESHOLD: '1000' });
  const d1 = await h.delivery(dst.id);
  await h.run([d1.deliveryId], quick.deps);
  const state = await h.db.pool.query('SELECT state, disabled_reason FROM destinations WHERE id = $1', [dst.id]);
  expect(state.rows[0]).toEqual({ state: 'ACTIVE', disabled_reason: null });

  await sleep(350);
  const d2 = await h.delivery(dst.id);
  await h.run([d2.deliveryId], quick.deps);
  const after = (await h.db.pool.query('SELECT state, disabled_reason FROM destinations WHERE id = $1', [dst.id])).rows[0];
  expect(after.state).toBe('DISABLED');
  expect(after.disabled_reason).toMatch(/failing without a success/);
  expect(after.disabled_reason).toMatch(/http_error/);

  const d3 = await h.delivery(dst.id);
  expect(await h.run([d3.deliveryId], quick.deps)).toMatchObject({ claimed: 0 });
  expect(rx.requests).toHaveLength(2);
});

test('the rate-limit window is atomic across connections: exactly the limit is granted', async () => {
  const conns = [createRedis(h.config.REDIS_URL, 'worker'), createRedis(h.config.REDIS_URL, 'worker'), createRedis(h.config.REDIS_URL, 'worker')];
  try {
    const now = Date.now();
    const grants = await Promise.all(Array.from({ length: 30 }, (_, i) => takeRateTokens(conns[i % 3]!, h.prefix, 'dst_atomic', 7, 1 + (i % 2), now)));
    expect(grants.reduce((s, g) => s + g.allowed, 0)).toBe(7);
    expect(grants.every((g) => g.nextWindowAt === (Math.floor(now / 1000) + 1) * 1000)).toBe(true);
    // The next second is a new window.
    expect((await takeRateTokens(conns[0]!, h.prefix, 'dst_atomic', 7, 10, now + 1000)).allowed).toBe(7);
  } finally {
    await Promise.all(conns.map((c) => c.quit()));
  }
});

test('rate_limit_per_second holds across two replicas: the rest wait (no attempt used) and all arrive', async () => {
  const rx = await startReceiver();
  receivers.push(rx);
  const dst = await h.destination(rx.url, { config: { rate_limit_per_second: 3 } });
  const ds = await Promise.all(Array.from({ length: 9 }, () => h.delivery(dst.id)));
  const ids = ds.map((d) => d.deliveryId);
  h.startWorker();
  const second = h.replica();
  // deliverBatch takes its gate's clock from Date.now() (no clock to inject), so both first
  // batches are started right after a second boundary to share one rate window. Before each
  // batch reads its clock there is one claim statement; the second replica's Redis
  // connection is made beforehand. A timer that fires late on a loaded machine (past the
  // first 100 ms of a second) waits for the next boundary: the batches always start with
  // over 900 ms left in the window.
  await second.deps.redis.ping();
  do {
    await sleep(1005 - (Date.now() % 1000));
  } while (Date.now() % 1000 > 100);
  const [a, b] = await Promise.all([h.run(ids.slice(0, 5)), h.run(ids.slice(5), second.deps)]);
  expect(a.delivered + b.delivered).toBeLessThanOrEqual(3);
  expect(a.deferred + b.deferred).toBeGreaterThanOrEqual(6);

  await waitFor(async () => (await h.db.pool.query(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1) AND status = 'delivered'`, [ids])).rows[0].n === 9, { what: 'all nine delivered' });
  const counts = (await h.db.pool.query(`SELECT attempt_count FROM deliveries WHERE id = ANY($1)`, [ids])).rows.map((r) => r.attempt_count);
  expect(counts).toEqual(new Array(9).fill(1));
  expect(rx.requests).toHaveLength(9);
  // Nine at three per second need at least three one-second windows.
  const at = rx.requests.map((r) => r.at).sort((x, y) => x - y);
  expect(at[8]! - at[0]!).toBeGreaterThan(1000);
});
