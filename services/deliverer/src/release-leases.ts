import type { Pool } from '@hookline/db';

// Deliveries this process still holds, among the ids of its unfinished jobs, go back: the
// lease dropped, due now. The lease owner is `<instance id>:<random>` (newLeaseOwner),
// hence the prefix match.
export const RELEASE_SQL = `UPDATE deliveries SET lease_until = NULL, lease_owner = NULL, next_attempt_at = now(), updated_at = now()
WHERE id = ANY($2::text[]) AND left(lease_owner, length($1)) = $1
RETURNING id`;

/**
 * At the drain deadline: gives back every delivery of `deliveryIds` (the unfinished jobs'
 * ids) that this process has claimed but not recorded yet, so that the jobs put back on
 * the queue find them claimable at once (rather than after the lease expires). A request
 * already sent may still arrive: at-least-once.
 */
export async function releaseHeldDeliveries(pool: Pool, instanceId: string, deliveryIds: string[]): Promise<string[]> {
  if (deliveryIds.length === 0) return [];
  const { rows } = await pool.query<{ id: string }>(RELEASE_SQL, [`${instanceId}:`, deliveryIds]);
  return rows.map((r) => r.id);
}
