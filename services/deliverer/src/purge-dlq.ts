import type { Pool } from '@hookline/db';
import { withTryLock } from '@hookline/db';

// Deletes expired DLQ entries (attempts go with them, by cascade) and the retained
// payloads of their events when no other delivery of the event still needs one (any not
// yet delivered, including a younger DLQ entry). Events that lost their payload are
// marked status_reason = 'payload_purged'; the API refuses replay without a payload row.
export const PURGE_SQL = `
WITH gone AS (
  DELETE FROM deliveries WHERE id IN (
    SELECT id FROM deliveries WHERE status = 'exhausted' AND exhausted_at < now() - $1::float8 * interval '1 millisecond'
    ORDER BY exhausted_at LIMIT $2
  ) RETURNING id, event_id
), orphan AS (
  SELECT DISTINCT g.event_id FROM gone g
  WHERE NOT EXISTS (
    SELECT 1 FROM deliveries d
    WHERE d.event_id = g.event_id AND d.status <> 'delivered' AND d.id NOT IN (SELECT id FROM gone)
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
