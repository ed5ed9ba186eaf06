import { newId, type Pool } from '@hookline/db';
import { CLAIMABLE_SQL } from './lease';
import type { Decision } from './retry-policy';
import type { SendResult } from './send-result';

export interface Outcome {
  deliveryId: string;
  tenantId: string;
  eventId: string;
  attemptNumber: number;
  result: SendResult;
  decision: Decision;
}

// All attempts in one multi-row INSERT and all delivery outcomes in one UPDATE, as one
// statement. The lease guard (the owner, and a status a lease can hold) keeps a claim
// that expired (and was taken over, or replayed) from overwriting the newer state; its
// attempt is still recorded.
const RECORD_SQL = `
WITH att AS (
  INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, response_headers, error_kind, error, started_at, duration_ms, via)
  SELECT a.id, a.tenant_id, a.delivery_id, a.number, a.status_code, a.body, a.headers::jsonb, a.kind, a.error, a.started_at, a.duration, $15
  FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::int[])
    AS a(id, tenant_id, delivery_id, number, status_code, body, headers, kind, error, started_at, duration)
)
UPDATE deliveries d SET
  status = u.status::"DeliveryStatus",
  attempt_count = GREATEST(d.attempt_count, u.number),
  next_attempt_at = CASE WHEN u.status = 'failed' THEN now() + u.delay::float8 * interval '1 millisecond' ELSE d.next_attempt_at END,
  lease_until = NULL, lease_owner = NULL,
  last_error = u.error, last_status_code = u.status_code,
  delivered_at = CASE WHEN u.status = 'delivered' THEN now() ELSE d.delivered_at END,
  exhausted_at = CASE WHEN u.status = 'exhausted' THEN now() ELSE d.exhausted_at END,
  updated_at = now()
FROM unnest($3::text[], $4::int[], $12::text[], $13::int[], $9::text[], $5::int[], $14::text[]) AS u(id, number, status, delay, error, status_code, owner)
WHERE d.id = u.id AND d.lease_owner = u.owner AND d.status IN (${CLAIMABLE_SQL})`;

// Event status from all of its deliveries: any exhausted -> dlq_queued, else any failed ->
// failed, else all delivered -> delivered (status_reason 'replayed' when one was replayed).
// Events that still have deliveries in flight keep their status. Aggregated per event id
// (LATERAL, by the (event_id, flow_id) index) so that stale statistics cannot turn it into
// a scan of the whole deliveries table, as `event_id = ANY(...)` did in the benchmark.
const EVENTS_SQL = `
WITH next AS (
  SELECT x.event_id, a.any_replayed,
    (CASE WHEN a.any_exhausted THEN 'dlq_queued' WHEN a.any_failed THEN 'failed' WHEN a.all_delivered THEN 'delivered' END)::"EventStatus" AS status
  FROM unnest($1::text[]) AS x(event_id)
  CROSS JOIN LATERAL (
    SELECT bool_or(d.status = 'exhausted') AS any_exhausted,
      bool_or(d.status = 'failed') AS any_failed,
      bool_and(d.status = 'delivered') AS all_delivered,
      bool_or(d.replay_count > 0) AS any_replayed
    FROM deliveries d WHERE d.event_id = x.event_id
  ) a
)
UPDATE events e SET
  status = n.status,
  status_reason = CASE WHEN n.status = 'delivered' AND n.any_replayed THEN 'replayed' ELSE e.status_reason END,
  delivered_at = CASE WHEN n.status = 'delivered' THEN now() ELSE e.delivered_at END,
  failed_at = CASE WHEN n.status IN ('failed', 'dlq_queued') AND e.status NOT IN ('failed', 'dlq_queued') THEN now() ELSE e.failed_at END,
  updated_at = now()
FROM next n
WHERE e.id = n.event_id AND n.status IS NOT NULL AND e.status IS DISTINCT FROM n.status`;

export interface RecordOptions {
  /** `delivery_attempts.via`: who made the attempt. */
  via?: 'direct' | 'edge';
  /**
   * Record only the deliveries the lease still holds. Edge reports use it: a repeated
   * report, or one for a lease that expired and went to another agent, changes nothing.
   * The deliverer records every attempt it made, held or not.
   */
  onlyHeld?: boolean;
}

/** Outcomes of deliveries claimed under one lease owner. */
export interface OwnedOutcomes {
  leaseOwner: string;
  outcomes: Outcome[];
}

/**
 * Writes a batch's attempts and outcomes, then the status of their events, in one
 * transaction. The events are locked first (in id order) so that the aggregate is read
 * after any concurrent batch of the same event has committed: the last writer sees all.
 * Returns the outcomes written.
 */
export async function recordOutcomes(pool: Pool, leaseOwner: string, all: Outcome[], opts: RecordOptions = {}): Promise<Outcome[]> {
  return recordOwnedOutcomes(pool, [{ leaseOwner, outcomes: all }], opts);
}

/**
 * recordOutcomes for several claims at once (each row guarded by its own lease owner):
 * the deliverer merges the outcomes of concurrent jobs into one transaction.
 */
export async function recordOwnedOutcomes(pool: Pool, groups: OwnedOutcomes[], opts: RecordOptions = {}): Promise<Outcome[]> {
  const owned = groups.flatMap((g) => g.outcomes.map((o) => ({ o, owner: g.leaseOwner })));
  if (owned.length === 0) return [];
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let rows = owned;
    if (opts.onlyHeld) {
      const { rows: held } = await client.query<{ id: string }>(
        `SELECT d.id FROM deliveries d JOIN unnest($1::text[], $2::text[]) AS u(id, owner) ON d.id = u.id AND d.lease_owner = u.owner
         WHERE d.status IN (${CLAIMABLE_SQL}) ORDER BY d.id FOR UPDATE OF d`,
        [owned.map((x) => x.o.deliveryId), owned.map((x) => x.owner)],
      );
      const ids = new Set(held.map((r) => r.id));
      rows = owned.filter((x) => ids.has(x.o.deliveryId));
      if (rows.length === 0) {
        await client.query('ROLLBACK');
        return [];
      }
    }
    const col = <T>(f: (o: Outcome) => T): T[] => rows.map((x) => f(x.o));
    const eventIds = [...new Set(col((o) => o.eventId))];
    await client.query(RECORD_SQL, [
      col(() => newId('att')),
      col((o) => o.tenantId),
      col((o) => o.deliveryId),
      col((o) => o.attemptNumber),
      col((o) => o.result.statusCode),
      col((o) => o.result.responseBody),
      col((o) => (o.result.responseHeaders ? JSON.stringify(o.result.responseHeaders) : null)),
      col((o) => o.result.errorKind),
      col((o) => o.result.error),
      col((o) => o.result.startedAt),
      col((o) => o.result.durationMs),
      col((o) => o.decision.status),
      col((o) => (o.decision.status === 'failed' ? Math.round(o.decision.delayMs) : 0)),
      rows.map((x) => x.owner),
      opts.via ?? 'direct',
    ]);
    await client.query('SELECT 1 FROM events WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [eventIds]);
    await client.query(EVENTS_SQL, [eventIds]);
    await client.query('COMMIT');
    return rows.map((x) => x.o);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
