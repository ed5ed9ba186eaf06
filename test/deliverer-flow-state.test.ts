// SPEC.md lifecycle: a DISABLED (or DELETED) delivery flow stops its deliveries, retries
// and replays included, and a re-enabled one resumes them, as a disabled destination does.
import { deliveryPolicy } from '@hookline/delivery';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { sweepEdgeWaits } from '../services/deliverer/src/edge-wait-sweep';
import { recoverDeliveries } from '../services/deliverer/src/recover-deliveries';
import { createHarness, type Harness } from './deliverer-fixtures';
import { insertCluster, insertEdgeDelivery } from './edge-fixtures';

jest.setTimeout(60_000);

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await createHarness('dlvflowstate');
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

const flowOf = async (deliveryId: string): Promise<string> => (await h.db.pool.query('SELECT flow_id FROM deliveries WHERE id = $1', [deliveryId])).rows[0].flow_id;
const setFlow = (flowId: string, state: string) => h.db.pool.query(`UPDATE delivery_flows SET state = $2 WHERE id = $1`, [flowId, state]);
const overdue = (deliveryId: string) => h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 minute' WHERE id = $1`, [deliveryId]);
const sweep = () => recoverDeliveries({ pool: h.db.pool, producer: h.deps.producer }, { afterMs: 1000, batchSize: 100 });

test('a delivery of a DISABLED flow is neither sent nor recovered; re-enabled, the sweep sends it', async () => {
  const dst = await h.destination(rx.url);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  const flowId = await flowOf(deliveryId);
  await setFlow(flowId, 'DISABLED');

  expect(await h.run([deliveryId])).toMatchObject({ claimed: 0 });
  await overdue(deliveryId);
  expect(await sweep()).toBe(0);
  expect(rx.requests).toHaveLength(0);
  expect(await h.row(deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0 });
  expect(await h.attempts(deliveryId)).toEqual([]);

  await setFlow(flowId, 'ACTIVE');
  expect(await sweep()).toBe(1);
  h.startWorker();
  await waitFor(async () => (await h.row(deliveryId)).status === 'delivered', { what: 'the delivery sent after the flow was enabled' });
  expect(rx.requests.map((r) => r.headers['x-service-delivery-idempotency-key'])).toEqual([deliveryId]);
  expect((await h.event(eventId)).status).toBe('delivered');
});

test('a DELETED flow stops a replay from the DLQ', async () => {
  const dst = await h.destination(rx.url);
  const { deliveryId } = await h.delivery(dst.id);
  await setFlow(await flowOf(deliveryId), 'DELETED');
  await h.db.pool.query(`UPDATE deliveries SET status = 'replaying', replay_count = 1, attempt_count = 5, next_attempt_at = now() WHERE id = $1`, [deliveryId]);
  const before = rx.requests.length;
  expect(await h.run([deliveryId])).toMatchObject({ claimed: 0 });
  expect(rx.requests.length).toBe(before);
  expect((await h.row(deliveryId)).status).toBe('replaying');
});

test('the edge wait sweep leaves a disabled flow\'s deliveries alone (no attempt used)', async () => {
  const cluster = await insertCluster(h.db.pool, h.tenantId);
  const d = await insertEdgeDelivery(h.db.pool, h.tenantId, cluster.id, { nextAttemptAt: new Date(Date.now() - 60_000) });
  await setFlow(await flowOf(d.deliveryId), 'DISABLED');
  const input = { connectedWindowMs: 2_000, waitLimitMs: 5_000, batchSize: 100, instanceId: 'test' };
  expect(await sweepEdgeWaits({ pool: h.db.pool, policy: deliveryPolicy(h.config) }, input)).toBe(0);
  expect(await h.row(d.deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0 });
});
