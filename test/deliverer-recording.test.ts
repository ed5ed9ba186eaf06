// When outcomes are written: as each request completes (not after the batch's slowest),
// and again after PostgreSQL dropped the connection mid-write (not by sending again); so
// are give-backs (deliveries released unsent).
import type { Pool } from '@hookline/db';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await createHarness('dlvrec');
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

/** A receiver answering 200; with `hold`, each answer waits until that promise settles. */
async function receiver(hold?: Promise<unknown>): Promise<Receiver> {
  const r = await startReceiver(() => ({ status: 200, body: 'ok', ...(hold ? { hold } : {}) }));
  receivers.push(r);
  return r;
}

test('a delivered request is recorded while a slower request of the same batch is still out', async () => {
  // The slow receiver answers only once the test has seen the fast delivery recorded (not
  // after a fixed delay that a slow machine could outlast).
  let answerSlow!: () => void;
  const slowAnswer = new Promise<void>((r) => (answerSlow = r));
  const fast = await h.destination(`${(await receiver()).url}/fast`);
  const slowRx = await receiver(slowAnswer);
  const slow = await h.destination(`${slowRx.url}/slow`, { config: { timeout_ms: 10_000 } });
  const a = await h.delivery(fast.id);
  const b = await h.delivery(slow.id);
  let finished = false;
  const run = h.run([a.deliveryId, b.deliveryId]).then((s) => {
    finished = true;
    return s;
  });
  try {
    await waitFor(async () => (await h.row(a.deliveryId)).status === 'delivered', { what: 'the fast delivery recorded' });
    expect((await h.row(b.deliveryId)).status).toBe('delivering');
    expect(await h.attempts(a.deliveryId)).toHaveLength(1);
    expect(finished).toBe(false);
  } finally {
    answerSlow();
  }
  expect(await run).toMatchObject({ claimed: 2, delivered: 2 });
  expect(slowRx.requests).toHaveLength(1);
  expect((await h.row(b.deliveryId)).status).toBe('delivered');
  expect((await h.event(a.eventId)).status).toBe('delivered');
});

test('a write cut off by PostgreSQL (connection terminated) is retried: recorded once, sent once', async () => {
  const rx = await receiver();
  const dst = await h.destination(`${rx.url}/once`);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  // Hold the event's row lock so that the outcome write waits inside PostgreSQL,
  // then terminate that backend, as a restart would, and let go of the lock.
  const holder = await h.lockEvent(eventId);
  try {
    const run = h.run([deliveryId]);
    const blocked = await waitFor(
      async () => (await holder.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [(await holder.query('SELECT pg_backend_pid() AS p')).rows[0].p])).rows[0]?.pid,
      { what: 'the outcome write waiting on the event lock' },
    );
    expect(rx.requests).toHaveLength(1);
    await holder.query('SELECT pg_terminate_backend($1)', [blocked]);
    await holder.query('ROLLBACK');
    expect(await run).toMatchObject({ claimed: 1, delivered: 1 });
  } finally {
    await holder.end();
  }
  expect(rx.requests).toHaveLength(1);
  expect((await h.row(deliveryId)).status).toBe('delivered');
  expect(await h.attempts(deliveryId)).toHaveLength(1);
  expect((await h.event(eventId)).status).toBe('delivered');
});

/** `pool`, whose first query matching `sql` fails as a PostgreSQL restart fails it (57P01, admin_shutdown). */
function failingOnce(pool: Pool, sql: RegExp): { pool: Pool; failed: () => number } {
  let failed = 0;
  const query = (text: unknown, ...rest: unknown[]): unknown => {
    if (failed === 0 && typeof text === 'string' && sql.test(text)) {
      failed++;
      return Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    }
    return (pool.query as (...a: unknown[]) => unknown)(text, ...rest);
  };
  const wrapped = new Proxy(pool, { get: (target, prop) => (prop === 'query' ? query : Reflect.get(target, prop, target)) });
  return { pool: wrapped, failed: () => failed };
}

test('a give-back cut off by PostgreSQL (57P01) is retried: released unsent, no attempt used, the job does not fail', async () => {
  const rx = await receiver();
  const dst = await h.destination(`${rx.url}/held-back`);
  const { deliveryId } = await h.delivery(dst.id);
  // Its circuit open: the claim-time gate holds the delivery back and gives it back.
  await h.deps.breaker.record(dst.id, { successes: 0, trailingFailures: h.config.BREAKER_FAILURE_THRESHOLD, lastError: 'http_error: HTTP 500' });
  const db = failingOnce(h.db.pool, /SET lease_until = NULL, lease_owner = NULL, next_attempt_at/);

  expect(await h.run([deliveryId], { ...h.deps, pool: db.pool })).toMatchObject({ claimed: 1, deferred: 1 });
  expect(db.failed()).toBe(1);
  expect(rx.requests).toHaveLength(0);
  const row = await h.row(deliveryId);
  expect(row).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null, lease_until: null });
  // Due when the cooldown ends.
  expect(row.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + h.config.BREAKER_COOLDOWN_MS / 2);
});
