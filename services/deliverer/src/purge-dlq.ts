import type { Pool } from '@hookline/db';
import { withTryLock } from '@hookline/db';

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
), marked AS (
  UPDATE events e SET status_reason = 'payload_purged', updated_at = now()
  FROM payloads x WHERE e.id = x.event_id RETURNING e.id
)
SELECT (SELECT count(*) FROM gone)::int AS deliveries, (SELECT count(*) FROM marked)::int AS payloads`;

export interface PurgeResult {
  deliveries: number;
  payloads: number;
}

/** Purges DLQ entries older than `retentionMs`, in chunks; null when another replica is purging. */
export async function purgeDlq(pool: Pool, input: { retentionMs: number; chunk?: number }): Promise<PurgeResult | null> {
  const chunk = input.chunk ?? 1000;
  const total: PurgeResult = { deliveries: 0, payloads: 0 };
  for (;;) {
    const r = await withTryLock(pool, 'hookline-deliverer-purge', async (client) => (await client.query<PurgeResult>(PURGE_SQL, [input.retentionMs, chunk])).rows[0]!);
    if (r === null) return total.deliveries > 0 ? total : null;
    total.deliveries += r.deliveries;
    total.payloads += r.payloads;
    if (r.deliveries < chunk) return total;
  }
}
