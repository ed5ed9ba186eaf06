import type { Pool } from '@hookline/db';

/** Readiness counts a tenant's open deliveries up to this many (then `open_capped`). */
export const OPEN_DELIVERIES_CAP = 1000;

/**
 * A tenant's backlog for readiness (GET /v1/readiness, the MCP get_readiness): its open
 * deliveries (pending, failed or replaying) counted up to OPEN_DELIVERIES_CAP through
 * deliveries_tenant_id_status_id_idx, a bounded read however large the backlog. The shared
 * queues' depths are every tenant's traffic, so readiness shows this instead.
 */
export async function openDeliveries(pool: Pick<Pool, 'query'>, tenantId: string): Promise<{ open: number; open_capped: boolean }> {
  const { rows } = await pool.query<{ open: number }>(
    `SELECT count(*)::int AS open FROM (SELECT 1 FROM deliveries WHERE tenant_id = $1 AND status IN ('pending', 'failed', 'replaying') LIMIT $2) d`,
    [tenantId, OPEN_DELIVERIES_CAP + 1],
  );
  const open = rows[0]?.open ?? 0;
  return { open: Math.min(open, OPEN_DELIVERIES_CAP), open_capped: open > OPEN_DELIVERIES_CAP };
}
