import type { Pool } from '@hookline/db';
import type { Producer } from '@hookline/queues';
import { withTryLock } from '@hookline/db';
import { CLAIMABLE_SQL, flowActiveSql, freeSql } from '@hookline/delivery';

export interface RecoveryInput {
  /** A due delivery with no job for this long is re-enqueued. */
  afterMs: number;
  batchSize: number;
  /** Ids per deliver job. */
  jobSize?: number;
}

// Two kinds of stranded deliveries: due ones whose job was lost (Redis flushed, a crash
// between commit and enqueue), and ones a crashed deliverer held (lease expired). Both are
// due rows with no live lease; they get next_attempt_at = now() and the lease dropped, so
// one sweep re-enqueues a delivery at most once per `afterMs`. Direct, ACTIVE
// destinations and ACTIVE flows only (the claim would refuse the others). Held rows (open
// deliveries of a DISABLED destination, `held`) are not in the partial index it walks
// (deliveries_next_attempt_at_due_idx ... AND NOT held), so a large held backlog, old and
// due, costs the sweep nothing; `AND NOT d.held` lets the planner use that index.
export const SWEEP_SQL = `
WITH due AS (
  SELECT d.id FROM deliveries d JOIN destinations t ON t.id = d.destination_id
  WHERE d.status IN (${CLAIMABLE_SQL}) AND NOT d.held AND d.next_attempt_at < now() - $1::float8 * interval '1 millisecond'
    AND ${freeSql('d')} AND t.cluster_id IS NULL AND t.state = 'ACTIVE' AND ${flowActiveSql('d')}
  ORDER BY d.next_attempt_at LIMIT $2
  FOR UPDATE OF d SKIP LOCKED
)
UPDATE deliveries d SET lease_until = NULL, lease_owner = NULL, next_attempt_at = now(), updated_at = now()
WHERE d.id IN (SELECT id FROM due)
RETURNING d.id`;

/**
 * One recovery sweep (skipped when another replica holds the lock). Returns how many
 * deliveries were re-enqueued, or null when the lock was taken.
 */
export async function recoverDeliveries(deps: { pool: Pool; producer: Producer }, input: RecoveryInput): Promise<number | null> {
  const ids = await withTryLock(deps.pool, 'hookline-deliverer-recovery', async (client) => {
    const { rows } = await client.query<{ id: string }>(SWEEP_SQL, [input.afterMs, input.batchSize]);
    return rows.map((r) => r.id);
  });
  if (ids === null) return null;
  const size = input.jobSize ?? 100;
  for (let i = 0; i < ids.length; i += size) await deps.producer.add('deliver', { v: 1, deliveryIds: ids.slice(i, i + size) });
  return ids.length;
}
