import type { Pool } from '@hookline/db';
import { publishConfigChange, type Redis } from '@hookline/queues';

/**
 * Stops deliveries to a destination that has failed without a success for too long: it
 * becomes DISABLED with a visible reason, and its waiting deliveries stay where they are
 * (re-enabling it lets the recovery sweep pick them up). True when this call disabled it.
 */
export async function disableDestination(pool: Pool, redis: Redis, prefix: string, destinationId: string, reason: string): Promise<boolean> {
  const { rows } = await pool.query<{ tenant_id: string }>(
    `UPDATE destinations SET state = 'DISABLED', disabled_reason = $2, updated_at = now()
     WHERE id = $1 AND state = 'ACTIVE' RETURNING tenant_id`,
    [destinationId, reason],
  );
  const row = rows[0];
  if (!row) return false;
  await publishConfigChange(redis, prefix, { kind: 'destination', id: destinationId, tenantId: row.tenant_id });
  return true;
}
