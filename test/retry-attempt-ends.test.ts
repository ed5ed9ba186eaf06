// Retry and an attempt that ends during the call: RETRY_SQL leaves a delivery in flight
// (leased) to its attempt; when that attempt ends before the answer is decided, the
// delivery is retryable, and the retry runs once more and takes it. explainNoRetry names
// flow_not_active only for a flow that is not ACTIVE (it answered flow_not_active for an
// ACTIVE flow when it found a delivery retryable).
import { createLogger } from '@hookline/logger';
import { waitFor } from '@hookline/testing';
import { explainNoRetry, retryEvent } from '../services/api/src/replay/replay.service';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, setOwnerState } from './api-fixtures';

jest.setTimeout(30_000);

let h: ApiHarness;
const logger = createLogger('retry-attempt-ends-test', 'error');
beforeAll(async () => {
  h = await startApi('retryattemptends');
});
afterAll(async () => {
  await h.close();
});

const deps = () => ({ pool: h.db.pool, producer: h.producer, logger, pools: new Map<string, string>() });

async function queuedDeliveryIds(): Promise<string[]> {
  const jobs = await h.producer.queue('deliver').getJobs(['waiting', 'delayed', 'prioritized']);
  return jobs.flatMap((j) => (j.data as { deliveryIds: string[] }).deliveryIds);
}

describe('retry while an attempt of the delivery ends', () => {
  it('retries the delivery whose lease ended between the retry and its explanation, instead of answering flow_not_active', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'failed', attempts: 2 });
    // An attempt in flight.
    await h.db.pool.query(`UPDATE deliveries SET lease_owner = 'L', lease_until = now() + interval '1 hour' WHERE id = $1`, [dlv]);

    // Something holds the destination row: the retry's transaction (its now() taken) waits in lockOwners.
    const holder = await h.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM destinations WHERE id = $1 FOR UPDATE', [p.destinationId]);
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      let settled = false;
      const retry = retryEvent(deps(), t.tenantId, evt);
      retry.then(() => (settled = true), () => (settled = true));
      await waitFor(async () => (await h.db.pool.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])).rowCount! > 0, {
        intervalMs: 10,
        what: 'the retry to wait for the destination lock',
      });
      expect(settled).toBe(false);
      // The attempt ends: its lease ends now, after the retry's transaction began (so
      // RETRY_SQL, reading now() as of that start, still sees it in flight) and before the
      // explanation runs.
      await h.db.pool.query('UPDATE deliveries SET lease_until = clock_timestamp() WHERE id = $1', [dlv]);
      await holder.query('ROLLBACK');

      expect(await retry).toEqual([dlv]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    expect((await h.db.pool.query('SELECT status::text AS status, lease_owner FROM deliveries WHERE id = $1', [dlv])).rows[0]).toEqual({ status: 'pending', lease_owner: null });
    expect(await queuedDeliveryIds()).toContain(dlv);
  });

  it('explainNoRetry: null for a retryable delivery of an ACTIVE flow; flow_not_active only for a flow that is not ACTIVE', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'x');
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
    await insertDelivery(h, t.tenantId, evt, p, { status: 'failed', attempts: 2 });
    // The state explainNoRetry sees once the attempt ended: free, retained, destination and flow ACTIVE.
    expect(await explainNoRetry({ pool: h.db.pool }, t.tenantId, evt)).toBeNull();

    await setOwnerState(h, t, 'delivery-flows', p.flowId, 'DISABLED');
    const why = await explainNoRetry({ pool: h.db.pool }, t.tenantId, evt);
    expect(why).toMatchObject({ extras: { reason_code: 'flow_not_active' } });
    expect(why?.message).toMatch(/DISABLED/);
  });
});
