// DLQ retention: exhausted deliveries older than DLQ_RETENTION_MS are purged with the
// retained payloads nothing else needs.
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import type { PoolClient } from 'pg';
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

/**
 * Runs the purge while `holder` (a connection of its own, in a transaction) holds a row
 * lock, until the purge has finished or waits for that lock; then commits the holder and
 * returns what the purge returned.
 */
async function purgeAround(holder: PoolClient): Promise<Awaited<ReturnType<typeof purgeDlq>>> {
  const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const purge = purgeDlq(h.db.pool, { retentionMs: 7 * DAY });
  let settled = false;
  purge.then(() => (settled = true), () => (settled = true));
  const waiting = async () => (await h.db.pool.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])).rowCount! > 0;
  await waitFor(async () => settled || (await waiting()), { intervalMs: 20, what: 'the purge to finish or wait for the lock' });
  await holder.query('COMMIT');
  return purge;
}

test('an old DLQ entry that a retry reopens while the purge runs keeps its row, attempts and payload; other old ones go', async () => {
  const reopened = await deliveryIn('exhausted', 8 * DAY);
  const other = await deliveryIn('exhausted', 8 * DAY);
  const a = await h.db.pool.connect();
  try {
    // The retry's UPDATE, not yet committed: it holds the row's lock.
    await a.query('BEGIN');
    await a.query(`UPDATE deliveries SET status = 'pending', next_attempt_at = now(), updated_at = now() WHERE id = $1`, [reopened.deliveryId]);
    expect(await purgeAround(a)).toEqual({ deliveries: 1, payloads: 1 });
  } finally {
    await a.query('ROLLBACK').catch(() => undefined);
    a.release();
  }
  expect((await h.row(reopened.deliveryId)).stored_status).toBe('pending');
  expect(await h.attempts(reopened.deliveryId)).toHaveLength(1);
  expect(await exists('event_payloads', 'event_id', reopened.eventId)).toBe(true);
  expect((await h.event(reopened.eventId)).status_reason).toBeNull();
  expect(await exists('deliveries', 'id', other.deliveryId)).toBe(false);
  expect(await exists('event_payloads', 'event_id', other.eventId)).toBe(false);
  await h.db.pool.query(`UPDATE deliveries SET status = 'delivered' WHERE id = $1`, [reopened.deliveryId]);
});

test('the payload stays when a replay reopens a delivered sibling of a purged DLQ entry while the purge runs', async () => {
  const old = await deliveryIn('exhausted', 8 * DAY);
  const sibling = await deliveryIn('delivered', 0, old.eventId);
  const a = await h.db.pool.connect();
  try {
    // The replay's UPDATE of the sibling, not yet committed.
    await a.query('BEGIN');
    await a.query(`UPDATE deliveries SET status = 'replaying', replay_count = replay_count + 1, next_attempt_at = now(), updated_at = now() WHERE id = $1`, [sibling.deliveryId]);
    expect(await purgeAround(a)).toEqual({ deliveries: 1, payloads: 0 });
  } finally {
    await a.query('ROLLBACK').catch(() => undefined);
    a.release();
  }
  expect(await exists('deliveries', 'id', old.deliveryId)).toBe(false);
  expect((await h.row(sibling.deliveryId)).stored_status).toBe('replaying');
  expect(await exists('event_payloads', 'event_id', old.eventId)).toBe(true);
  expect((await h.event(old.eventId)).status_reason).toBeNull();
  await h.db.pool.query(`UPDATE deliveries SET status = 'delivered' WHERE id = $1`, [sibling.deliveryId]);
});
