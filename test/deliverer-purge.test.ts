// DLQ retention: exhausted deliveries older than DLQ_RETENTION_MS are purged with the
// retained payloads nothing else needs.
import { startReceiver, type Receiver } from '@hookline/testing';
import { newId } from '@hookline/db';
import { purgeDlq } from '../services/deliverer/src/purge-dlq';
import { recoverDeliveries } from '../services/deliverer/src/recover-deliveries';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(30_000);

let h: Harness;
let rx: Receiver;
let dst: string;
const DAY = 86_400_000;

beforeAll(async () => {
  h = await createHarness('dlvpurge');
  rx = await startReceiver();
  dst = (await h.destination(rx.url)).id;
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

/** A delivery in `status`, exhausted `ageMs` ago when exhausted, with one attempt row. */
async function deliveryIn(status: string, ageMs = 0, eventId?: string): Promise<{ deliveryId: string; eventId: string }> {
  let d: { deliveryId: string; eventId: string };
  if (eventId) {
    d = { deliveryId: newId('dlv'), eventId };
    await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id) VALUES ($1, $2, $3, $4, $5)`, [d.deliveryId, h.tenantId, eventId, newId('flw'), dst]);
  } else {
    d = await h.delivery(dst);
  }
  await h.db.pool.query(`UPDATE deliveries SET status = $2::text::"DeliveryStatus", attempt_count = 1, exhausted_at = CASE WHEN $2::text = 'exhausted' THEN now() - $3::int8 * interval '1 millisecond' END WHERE id = $1`, [d.deliveryId, status, ageMs]);
  await h.db.pool.query(`INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, started_at, duration_ms) VALUES ($1, $2, $3, 1, 500, now(), 5)`, [newId('att'), h.tenantId, d.deliveryId]);
  return d;
}

const exists = async (table: string, col: string, id: string) => (await h.db.pool.query(`SELECT 1 FROM ${table} WHERE ${col} = $1`, [id])).rowCount === 1;

test('expired DLQ entries go with their attempts and, when nothing else needs it, their payload', async () => {
  const alone = await deliveryIn('exhausted', 8 * DAY);
  const shared = await deliveryIn('exhausted', 8 * DAY);
  const sibling = await deliveryIn('failed', 0, shared.eventId);
  const afterDelivered = await deliveryIn('exhausted', 8 * DAY);
  await deliveryIn('delivered', 0, afterDelivered.eventId);
  const young = await deliveryIn('exhausted', 1 * DAY);

  expect(await purgeDlq(h.db.pool, { retentionMs: 7 * DAY, chunk: 2 })).toEqual({ deliveries: 3, payloads: 2 });

  expect(await exists('deliveries', 'id', alone.deliveryId)).toBe(false);
  expect(await exists('delivery_attempts', 'delivery_id', alone.deliveryId)).toBe(false);
  expect(await exists('event_payloads', 'event_id', alone.eventId)).toBe(false);
  expect((await h.event(alone.eventId)).status_reason).toBe('payload_purged');

  expect(await exists('deliveries', 'id', shared.deliveryId)).toBe(false);
  expect(await exists('deliveries', 'id', sibling.deliveryId)).toBe(true);
  expect(await exists('event_payloads', 'event_id', shared.eventId)).toBe(true);

  expect(await exists('event_payloads', 'event_id', afterDelivered.eventId)).toBe(false);
  expect(await exists('deliveries', 'id', young.deliveryId)).toBe(true);
  expect(await exists('event_payloads', 'event_id', young.eventId)).toBe(true);

  expect(await purgeDlq(h.db.pool, { retentionMs: 7 * DAY })).toEqual({ deliveries: 0, payloads: 0 });
});

test('one replica at a time: purge and recovery step aside while another holds the lock', async () => {
  const old = await deliveryIn('exhausted', 8 * DAY);
  const client = await h.db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':hookline-deliverer-purge'))`);
    await client.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':hookline-deliverer-recovery'))`);
    expect(await purgeDlq(h.db.pool, { retentionMs: 7 * DAY })).toBeNull();
    expect(await recoverDeliveries({ pool: h.db.pool, producer: h.deps.producer }, { afterMs: 0, batchSize: 10 })).toBeNull();
    expect(await exists('deliveries', 'id', old.deliveryId)).toBe(true);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  expect((await purgeDlq(h.db.pool, { retentionMs: 7 * DAY }))?.deliveries).toBe(1);
});

test('a replay whose payload is gone is not sent: exhausted with error_kind payload_missing', async () => {
  const d = await deliveryIn('replaying');
  await h.db.pool.query('DELETE FROM event_payloads WHERE event_id = $1', [d.eventId]);
  expect(await h.run([d.deliveryId])).toMatchObject({ claimed: 1, exhausted: 1 });
  expect((await h.attempts(d.deliveryId)).at(-1)).toMatchObject({ number: 2, error_kind: 'payload_missing', status_code: null });
  expect(rx.requests).toHaveLength(0);
});
