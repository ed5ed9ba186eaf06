import type { Pool } from '@hookline/db';

// Deliveries this process still holds go back to a claimable status, due now; the lease
// owner is `<instance id>:<random>` (deliver-batch), hence the prefix match.
export const RELEASE_SQL = `UPDATE deliveries SET
  status = CASE WHEN attempt_count = 0 THEN 'pending'::"DeliveryStatus" ELSE 'failed'::"DeliveryStatus" END,
  lease_until = NULL, lease_owner = NULL, next_attempt_at = now(), updated_at = now()
WHERE status = 'delivering' AND left(lease_owner, length($1)) = $1
RETURNING id`;

/**
 * At the drain deadline: gives back every delivery this process has claimed but not
 * recorded yet, so that the jobs put back on the queue find them claimable at once (rather
 * than after the lease expires). A request already sent may still arrive: at-least-once.
 */
export async function releaseHeldDeliveries(pool: Pool, instanceId: string): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(RELEASE_SQL, [`${instanceId}:`]);
  return rows.map((r) => r.id);
}
