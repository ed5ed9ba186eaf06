// The rate limit and the circuit breaker hold when a request leaves, not only when its
// delivery is claimed: deliveries claimed and admitted earlier may wait for a concurrency
// slot (a slow destination's backlog) for a long time.
import { takeRateTokens } from '@hookline/delivery';
import { createLogger } from '@hookline/logger';
import { createRedis, destinationHealthKey, destinationRateKey, readDestinationHealthState, redisReady } from '@hookline/queues';
import { startReceiver, startRedisProxy, waitFor, type Receiver } from '@hookline/testing';
import { pausingRateTokens } from '../services/deliverer/src/rate-tokens';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await createHarness('dlvsendgate', { BREAKER_FAILURE_THRESHOLD: '2', BREAKER_COOLDOWN_MS: '60000' });
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

const idOf = (r: { headers: Record<string, unknown> }): string => String(r.headers['x-service-delivery-idempotency-key']);

test('a backlog built while the destination stalled goes out at rate_limit_per_second once it answers fast again', async () => {
  const N = 2;
  // The first N requests hang for 3 s (the destination stalls), then every answer is immediate.
  const rx = await startReceiver((n) => (n <= N ? { status: 200, delayMs: 3_000 } : { status: 200 }));
  receivers.push(rx);
  const dst = await h.destination(rx.url, { config: { rate_limit_per_second: N, max_concurrency: N } });
  const ids = (await Promise.all(Array.from({ length: 12 }, () => h.delivery(dst.id)))).map((d) => d.deliveryId);
  h.startWorker(4);
  await h.enqueue(ids);
  await waitFor(async () => (await h.db.pool.query(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1) AND status = 'delivered'`, [ids])).rows[0].n === ids.length, { what: 'all delivered', timeoutMs: 40_000 });

  // The limiter counts fixed one-second windows (epoch seconds, a Lua counter per second),
  // not a sliding second: N at the end of one second and N at the start of the next is
  // allowed, so requests are counted per window. Each request is stamped (webhook-timestamp)
  // with the second it was cleared to leave, i.e. the window its rate token came from; its
  // arrival may fall a few milliseconds later, into the next second. Counted that way the
  // limit is exact: no tolerance.
  const perWindow = new Map<string, number>();
  for (const r of rx.requests) {
    const second = String(r.headers['webhook-timestamp']);
    perWindow.set(second, (perWindow.get(second) ?? 0) + 1);
  }
  expect(rx.requests).toHaveLength(ids.length);
  expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(N);
  // Deliveries held back at sending used no attempt.
  const counts = (await h.db.pool.query(`SELECT attempt_count FROM deliveries WHERE id = ANY($1)`, [ids])).rows.map((r) => r.attempt_count);
  expect(counts).toEqual(new Array(ids.length).fill(1));
});

test('deliveries waiting for a slot when the circuit opens are given back unsent: no attempt used', async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const fastFailing = new Set<string>();
  // Another replica's requests fail at once; this replica's are held, then fail too.
  const rx = await startReceiver((_n, req) => (fastFailing.has(idOf(req)) ? { status: 500 } : { status: 500, hold: released }));
  receivers.push(rx);
  const dst = await h.destination(rx.url, { config: { max_concurrency: 2, retry_schedule_ms: [60_000], max_attempts: 10 } });
  const mine = (await Promise.all(Array.from({ length: 6 }, () => h.delivery(dst.id)))).map((d) => d.deliveryId);

  // One chunk, admitted whole while the circuit is closed: two requests go, four wait for a slot.
  const run = h.run(mine);
  await waitFor(() => rx.requests.length === 2, { what: 'two requests out' });

  // Meanwhile another replica's deliveries to it fail, and the circuit opens (threshold 2).
  const other = h.replica();
  const theirs = (await Promise.all([1, 2].map(() => h.delivery(dst.id)))).map((d) => d.deliveryId);
  theirs.forEach((id) => fastFailing.add(id));
  expect(await h.run(theirs, other.deps)).toMatchObject({ failed: 2 });
  const open = await readDestinationHealthState(h.redis, h.prefix, dst.id);
  expect(open.state).toBe('open');
  // This replica hears of it at its next claim for that destination (held back there).
  const late = await h.delivery(dst.id);
  expect(await h.run([late.deliveryId])).toMatchObject({ claimed: 1, deferred: 1 });

  release();
  expect(await run).toMatchObject({ claimed: 6, failed: 2, deferred: 4 });
  const sent = new Set(rx.requests.map(idOf));
  expect(rx.requests).toHaveLength(4); // two of mine, two of theirs
  const waited = mine.filter((id) => !sent.has(id));
  expect(waited).toHaveLength(4);
  for (const id of waited) {
    expect(await h.attempts(id)).toEqual([]);
    const row = await h.row(id);
    expect(row).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });
    // Due again when the cooldown ends, not before.
    expect(row.next_attempt_at.getTime()).toBeGreaterThanOrEqual(open.openedAt!.getTime() + 60_000);
  }
});

test('a half-open circuit’s probe goes even when the rate limit’s window is spent: it takes no rate token in its slot', async () => {
  const rx = await startReceiver();
  receivers.push(rx);
  const dst = await h.destination(rx.url, { config: { rate_limit_per_second: 1 } });
  const { deliveryId } = await h.delivery(dst.id);
  // Open since longer than the cooldown (60 s): the next admit lets one probe through.
  await h.redis.hset(destinationHealthKey(h.prefix, dst.id), 'state', 'open', 'opened_at', String(Date.now() - 61_000), 'failures', '2');
  // Every send-slot token of this second and the next few already taken (by other replicas).
  const second = Math.floor(Date.now() / 1000);
  for (let s = second; s <= second + 5; s++) await h.redis.set(destinationRateKey(h.prefix, dst.id, s), '1', 'PX', 10_000);

  expect(await h.run([deliveryId])).toMatchObject({ claimed: 1, delivered: 1, deferred: 0 });
  expect(rx.requests).toHaveLength(1);
  expect((await readDestinationHealthState(h.redis, h.prefix, dst.id)).state).toBe('closed');
});

test('with Redis stalled, requests waiting on a rate token hold no overall slot: an unlimited destination’s deliveries go first', async () => {
  const limited = await startReceiver();
  const unlimited = await startReceiver();
  receivers.push(limited, unlimited);
  const proxy = await startRedisProxy();
  // Two requests in flight overall; the send-slot rate tokens through a Redis that stalls
  // (the claim-time gate asks the real one, so it admits the deliveries and leaves them checked).
  const stalling = createRedis(proxy.url, 'producer', undefined, { commandTimeoutMs: 5_000 });
  let redisCalls = 0;
  const { deps: replica } = h.replica({ DELIVERER_MAX_IN_FLIGHT: '2' });
  const rateTokens = pausingRateTokens((id, perSecond, now) => (redisCalls++, takeRateTokens(stalling, h.prefix, id, perSecond, 1, now)), createLogger('deliverer-test', 'error'));
  const deps = { ...replica, rateTokens };
  try {
    expect(await redisReady(stalling, 20_000)).toBe(true);
    const a = await h.destination(limited.url, { config: { rate_limit_per_second: 100, max_concurrency: 2 } });
    const b = await h.destination(unlimited.url);
    const aIds = (await Promise.all([1, 2, 3, 4].map(() => h.delivery(a.id)))).map((d) => d.deliveryId);
    const bIds = (await Promise.all([1, 2, 3].map(() => h.delivery(b.id)))).map((d) => d.deliveryId);

    proxy.stall();
    const aRun = h.run(aIds, deps);
    // Both of A's slots are waiting on Redis for a token...
    await waitFor(() => redisCalls === 2, { what: 'two rate-token calls out' });
    // ...and B's deliveries still get the overall slots and go.
    expect(await h.run(bIds, deps)).toMatchObject({ claimed: 3, delivered: 3 });
    expect(unlimited.requests).toHaveLength(3);
    expect(limited.requests).toHaveLength(0);

    // Then A's go without the rate limit (fail open); after the first failure Redis is not
    // asked again for a while, so A's other two did not wait on it.
    expect(await aRun).toMatchObject({ claimed: 4, delivered: 4 });
    expect(limited.requests).toHaveLength(4);
    expect(redisCalls).toBe(2);
  } finally {
    proxy.resume();
    // Reconnected before it is closed (a client closed while connecting lingers for 2 s).
    await redisReady(stalling, 5_000);
    stalling.disconnect();
    await proxy.close();
  }
});
