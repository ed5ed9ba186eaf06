import type { Pool } from '@hookline/db';
import { withTryLock } from '@hookline/db';
import { ROLL_UP_EVENTS_SQL } from '@hookline/delivery';

// Deletes expired DLQ entries (attempts go with them, by cascade) and the retained
// payloads of their events when no other delivery of the event still needs one (any not
// yet delivered, including a younger DLQ entry). Events that lost their payload are
// marked status_reason = 'payload_purged'; the API refuses replay without a payload row.
//
// A retry or replay (an UPDATE to pending or replaying) may commit on the same rows while
// the purge runs. The entries are locked first, FOR UPDATE SKIP LOCKED (one a retry holds
// is left, and purged at a later run if still exhausted then), inside ARRAY(…) (an init
// plan: run once, never again per row), and status and age are checked again on the
// DELETE. With a plain `WHERE id IN (…)`, a DELETE that waited for a retry's lock re-checked
// only the id once the retry committed, and deleted the reopened delivery, its attempts
// and maybe its payload. Before the payload is decided, the event's other deliveries are
// locked FOR SHARE SKIP LOCKED: each is read as it is now (one a replay reopened after this
// statement began shows `replaying`), and one locked by someone else (being retried,
// replayed or sent) is skipped and keeps the payload, as any not yet delivered does.
//
// The events of purged entries are then rolled up again in the same transaction (purgeDlq):
// ROLL_UP_EVENTS_SQL, the roll-up outcomes use, from the deliveries that remain, then
// SETTLE_PURGED_SQL. Without it an event whose only DLQ entry expired stayed `dlq_queued`
// for ever with nothing in the DLQ (retry: 409, replay of a delivered sibling: 409
// payload_not_retained), or went `dlq_queued` → `delivered` when a sibling was delivered.
// The rule (see the README, DLQ retention, and GET /v1/dlq):
// - another delivery still exhausted (a younger DLQ entry): `dlq_queued` stays;
// - else one `failed` (being retried): `failed`; all `delivered`: `delivered` (the purged
//   entry is gone, its attempts with it: the event's status is its remaining deliveries');
// - else (the others still open: pending, held, replaying; or none left at all) the event
//   leaves `dlq_queued` for `failed`: not delivered everywhere, and nothing of it is in the
//   DLQ any more. Outcomes roll it up from there as usual (→ `delivered` once the open ones
//   are, → `dlq_queued` if one is exhausted again); with no delivery left it stays `failed`
//   (its payload went with the entry: status_reason `payload_purged`).
// Only `dlq_queued` events are moved by that last rule; `delivered` and `acked` ones keep
// their status and a `replayed` one follows the roll-up (→ `delivered` once all are).
// The marking `payload_purged` comes after the roll-up (SETTLE_PURGED_SQL), so the events
// are locked in id order (as the roll-up and outcomes lock them) before any is updated, and
// the roll-up's `replayed` reason does not replace it.
const CUTOFF = `now() - $1::float8 * interval '1 millisecond'`;

export const PURGE_SQL = `
WITH gone AS (
  DELETE FROM deliveries d WHERE d.id = ANY (ARRAY(
    SELECT c.id FROM deliveries c WHERE c.status = 'exhausted' AND c.exhausted_at < ${CUTOFF}
    ORDER BY c.exhausted_at LIMIT $2 FOR UPDATE SKIP LOCKED
  )) AND d.status = 'exhausted' AND d.exhausted_at < ${CUTOFF}
  RETURNING d.id, d.event_id
), kin AS (
  SELECT k.id, k.event_id, k.status FROM deliveries k
  WHERE k.event_id IN (SELECT event_id FROM gone) AND k.id NOT IN (SELECT id FROM gone)
  FOR SHARE SKIP LOCKED
), orphan AS (
  SELECT DISTINCT g.event_id FROM gone g
  WHERE NOT EXISTS (SELECT 1 FROM kin k WHERE k.event_id = g.event_id AND k.status <> 'delivered')
    AND NOT EXISTS (
      SELECT 1 FROM deliveries d
      WHERE d.event_id = g.event_id AND d.id NOT IN (SELECT id FROM gone) AND d.id NOT IN (SELECT id FROM kin)
    )
), payloads AS (
  DELETE FROM event_payloads p USING orphan o WHERE p.event_id = o.event_id RETURNING p.event_id
)
SELECT (SELECT count(*) FROM gone)::int AS deliveries,
       ARRAY(SELECT DISTINCT event_id FROM gone) AS event_ids,
       ARRAY(SELECT event_id FROM payloads) AS purged_event_ids`;

// After ROLL_UP_EVENTS_SQL on the events of the purged entries ($1): a `dlq_queued` one with
// no exhausted delivery left becomes `failed` (the roll-up leaves an event whose remaining
// deliveries are all open, or that has none, as it was); those whose payload went ($2) get
// status_reason `payload_purged`. Returns the ids marked `payload_purged`.
export const SETTLE_PURGED_SQL = `
UPDATE events e
   SET status = CASE WHEN e.status = 'dlq_queued' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.status = 'exhausted')
                     THEN 'failed'::"EventStatus" ELSE e.status END,
       status_reason = CASE WHEN e.id = ANY($2::text[]) THEN 'payload_purged' ELSE e.status_reason END,
       updated_at = now()
 WHERE e.id = ANY($1::text[])
   AND (e.id = ANY($2::text[])
        OR (e.status = 'dlq_queued' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.status = 'exhausted')))
RETURNING e.id, e.id = ANY($2::text[]) AS payload_purged`;

export interface PurgeResult {
  deliveries: number;
  payloads: number;
}

/** One chunk, inside the purge's transaction: the DELETE, then the events' roll-up. */
async function purgeChunk(client: Pick<Pool, 'query'>, retentionMs: number, chunk: number): Promise<PurgeResult> {
  const { rows } = await client.query<{ deliveries: number; event_ids: string[]; purged_event_ids: string[] }>(PURGE_SQL, [retentionMs, chunk]);
  const r = rows[0]!;
  if (!r.event_ids.length) return { deliveries: r.deliveries, payloads: 0 };
  await client.query(ROLL_UP_EVENTS_SQL, [r.event_ids]);
  const { rows: settled } = await client.query<{ id: string; payload_purged: boolean }>(SETTLE_PURGED_SQL, [r.event_ids, r.purged_event_ids]);
  return { deliveries: r.deliveries, payloads: settled.filter((x) => x.payload_purged).length };
}

/** Purges DLQ entries older than `retentionMs`, in chunks; null when another replica is purging. */
export async function purgeDlq(pool: Pool, input: { retentionMs: number; chunk?: number }): Promise<PurgeResult | null> {
  const chunk = input.chunk ?? 1000;
  const total: PurgeResult = { deliveries: 0, payloads: 0 };
  for (;;) {
    const r = await withTryLock(pool, 'hookline-deliverer-purge', (client) => purgeChunk(client, input.retentionMs, chunk));
    if (r === null) return total.deliveries > 0 ? total : null;
    total.deliveries += r.deliveries;
    total.payloads += r.payloads;
    if (r.deliveries < chunk) return total;
  }
}
