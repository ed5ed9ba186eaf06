// Nothing accepted is lost: deliveries whose jobs vanished from Redis, or whose deliverer
// died holding them, are found in PostgreSQL and sent again.
import { flushPrefix, startReceiver, startService, waitFor, type Receiver } from '@hookline/testing';
import { recoverDeliveries } from '../services/deliverer/src/recover-deliveries';
import { createHarness, TEST_ENV, type Harness } from './deliverer-fixtures';

jest.setTimeout(90_000);

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await createHarness('dlvrecover');
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

const sweep = () => recoverDeliveries({ pool: h.db.pool, producer: h.deps.producer }, { afterMs: 1000, batchSize: 100 });

test('the sweep re-enqueues overdue deliveries and expired leases, once per RECOVERY_AFTER_MS', async () => {
  const dst = await h.destination(rx.url);
  const lost = await h.delivery(dst.id);
  const crashed = await h.delivery(dst.id);
  const notYet = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 minute' WHERE id = $1`, [lost.deliveryId]);
  // A deliverer that crashed while sending a third attempt: its lease ran out.
  await h.db.pool.query(
    `UPDATE deliveries SET status = 'failed', attempt_count = 2, next_attempt_at = now() - interval '3 minutes', lease_owner = 'dead:1', lease_until = now() - interval '1 second' WHERE id = $1`,
    [crashed.deliveryId],
  );
  // notYet is due now but has not waited RECOVERY_AFTER_MS: its job may simply be queued.

  expect(await sweep()).toBe(2);
  const jobs = await h.deps.producer.queue('deliver').getJobs(['waiting']);
  expect(jobs.flatMap((j) => j.data.deliveryIds).sort()).toEqual([lost.deliveryId, crashed.deliveryId].sort());
  expect(await h.row(crashed.deliveryId)).toMatchObject({ status: 'failed', lease_owner: null, lease_until: null });
  expect((await h.row(notYet.deliveryId)).status).toBe('pending');
  // Re-enqueued ones wait RECOVERY_AFTER_MS again before a second sweep takes them.
  expect(await sweep()).toBe(0);

  h.startWorker();
  for (const id of [lost.deliveryId, crashed.deliveryId]) await waitFor(async () => (await h.row(id)).status === 'delivered', { what: `${id} delivered` });
  expect((await h.attempts(crashed.deliveryId)).map((a) => a.number)).toEqual([3]);
});

test('a long request keeps its lease renewed, so recovery does not take it back while in flight', async () => {
  const slow = await startReceiver(() => ({ status: 200, delayMs: 2000 }));
  try {
    const short = h.replica({ DELIVERY_LEASE_MS: '1000' });
    const d = await h.delivery((await h.destination(slow.url)).id);
    const running = h.run([d.deliveryId], short.deps);
    await new Promise((r) => setTimeout(r, 1500)); // past the first lease
    const row = await h.db.pool.query(`SELECT status, lease_until > now() AS leased FROM deliveries WHERE id = $1`, [d.deliveryId]);
    expect(row.rows[0]).toEqual({ status: 'pending', leased: true }); // held: the lease is the only write
    const owner = (await h.row(d.deliveryId)).lease_owner;
    await recoverDeliveries({ pool: h.db.pool, producer: h.deps.producer }, { afterMs: 0, batchSize: 100 });
    expect(await h.row(d.deliveryId)).toMatchObject({ status: 'delivering', lease_owner: owner });
    expect(await running).toMatchObject({ delivered: 1 });
    expect(slow.requests).toHaveLength(1);
  } finally {
    await slow.close();
  }
});

test('the deliverer process: Redis loses the job, the sweep delivers anyway; /readyz; SIGTERM exits 0', async () => {
  const dst = await h.destination(`${rx.url}/after-flush`);
  const { deliveryId } = await h.delivery(dst.id);
  const other = h.replica({ QUEUE_PREFIX: `${h.prefix}-proc` });
  await other.deps.producer.add('deliver', { v: 1, deliveryIds: [deliveryId] });
  expect(await flushPrefix(`${h.prefix}-proc`)).toBeGreaterThan(0);

  const proc = await startService('deliverer', {
    ...TEST_ENV,
    DATABASE_URL: h.db.url,
    QUEUE_PREFIX: `${h.prefix}-proc`,
    RECOVERY_INTERVAL_MS: '200',
    RECOVERY_AFTER_MS: '500',
  });
  try {
    await waitFor(async () => (await h.row(deliveryId)).status === 'delivered', { what: 'delivery after the flush', timeoutMs: 20_000 });
    expect(rx.requests.filter((r) => r.url === '/after-flush')).toHaveLength(1);
    const ready = await fetch(`${proc.url}/readyz`);
    expect(ready.status).toBe(200);

    // SIGTERM while a request is in flight: the job finishes and its outcome is recorded.
    const slow = await startReceiver(() => ({ status: 200, delayMs: 1000 }));
    try {
      const late = await h.delivery((await h.destination(slow.url)).id);
      await other.deps.producer.add('deliver', { v: 1, deliveryIds: [late.deliveryId] });
      await waitFor(() => slow.requests.length === 1, { what: 'the slow request to start' });
      expect(await proc.stop('SIGTERM')).toBe(0);
      expect((await h.row(late.deliveryId)).status).toBe('delivered');
    } finally {
      await slow.close();
    }
  } finally {
    await proc.stop('SIGKILL');
  }
});
