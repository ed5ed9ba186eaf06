import type { Pool } from '@hookline/db';
import { CLAIMABLE_SQL, flowActiveSql, freeSql } from '@hookline/delivery';
import type { AppContext } from '../context';
import { enqueueDeliveries, poolOf } from '../replay/requeue';

// What a destination's or a flow's lifecycle does to its deliveries (SPEC.md: DISABLED =
// delivery stopped, re-enable = delivery resumes, DELETED = removed for good).
//
// - Disabled: its open deliveries (pending, failed, replaying) are held: the deliverer's
//   claim and recovery sweep and the edge leases skip them, and the router keeps creating
//   deliveries for an ACTIVE flow to a DISABLED destination. A destination's (not a
//   flow's) are also marked `held` (lifecycle.ts, in the disable's transaction; the router
//   and retry store new ones so), which keeps them out of the recovery sweep's index.
// - Enabled: `held` is cleared in the enable's transaction, then the deliveries that are
//   due are handed to the deliverer at once (requeueHeld), instead of waiting for the
//   recovery sweep's RECOVERY_AFTER_MS.
// - Deleted: its open deliveries are closed in the delete's transaction (closeOpen):
//   `exhausted` (the DLQ, purged after DLQ_RETENTION_MS like any other), with a
//   last_error that says why, and their events' status rolled up as outcomes do.

type Queryable = Pick<Pool, 'query'>;

export type DeliveryOwner = 'destination' | 'flow';

/** `deliveries.last_error` of a delivery closed because its destination or flow was deleted. */
export const DELETED_ERROR: Record<DeliveryOwner, string> = {
  destination: 'destination_deleted: the destination was deleted, so this delivery will not be sent',
  flow: 'flow_deleted: the delivery flow was deleted, so this delivery will not be sent',
};

// The owner's deliveries: a destination's by its open-deliveries index (destination_id,
// next_attempt_at); a flow's among the tenant's open ones (tenant_id, status, id), since
// a flow may have been pointed at another destination after some were created.
const OWNED: Record<DeliveryOwner, string> = {
  destination: 'd.destination_id = $1 AND d.tenant_id = $2',
  flow: 'd.flow_id = $1 AND d.tenant_id = $2',
};

// Every open delivery, including one under a live lease (a send in flight): its outcome,
// recorded later, is then refused by record_delivery_outcomes' guard (lease owner and a
// claimable status; the lease is dropped here), so it stays exhausted; its attempt is
// still recorded in the history. Rows are locked in id order.
const closeSql = (owner: DeliveryOwner): string => `
WITH open AS (
  SELECT d.id FROM deliveries d
  WHERE ${OWNED[owner]} AND d.status IN (${CLAIMABLE_SQL})
  ORDER BY d.id FOR UPDATE
)
UPDATE deliveries d
   SET status = 'exhausted', exhausted_at = now(), lease_until = NULL, lease_owner = NULL, held = false, last_error = $3, updated_at = now()
  FROM open WHERE d.id = open.id
RETURNING d.event_id`;

// The events' status from all their deliveries, exactly as outcomes roll it up: the
// outcome function called with no attempts and no outcomes only locks the events (in id
// order) and derives their status (any exhausted -> dlq_queued, ...). One definition of
// the roll-up, in migration 20261121050000_outcomes_in_one_call.
const ROLL_UP_EVENTS = `SELECT record_delivery_outcomes('{}'::text[], '{}'::text[], '{}'::text[], '{}'::int[], '{}'::int[], '{}'::text[], '{}'::text[],
  '{}'::text[], '{}'::text[], '{}'::timestamptz[], '{}'::int[], '{}'::text[], '{}'::int[], '{}'::text[], NULL::text, $1::text[])`;

/**
 * Closes the open deliveries of a destination or flow being deleted (call it inside the
 * delete's transaction) and rolls their events' status up. Returns how many.
 */
export async function closeOpenDeliveries(db: Queryable, owner: DeliveryOwner, tenantId: string, id: string): Promise<number> {
  const { rows } = await db.query<{ event_id: string }>(closeSql(owner), [id, tenantId, DELETED_ERROR[owner]]);
  if (rows.length === 0) return 0;
  await db.query(ROLL_UP_EVENTS, [[...new Set(rows.map((r) => r.event_id))]]);
  return rows.length;
}

/** Held deliveries handed over at once on enable; more are left to the recovery sweep. */
export const REQUEUE_LIMIT = 10_000;

// Due, free, open deliveries that the deliverer may now claim (direct ACTIVE destination,
// flow not switched off): made due now, as the recovery sweep does, so that the sweep does
// not enqueue them a second time. Oldest first.
const requeueSql = (owner: DeliveryOwner): string => `
WITH due AS (
  SELECT d.id FROM deliveries d JOIN destinations t ON t.id = d.destination_id
  WHERE ${OWNED[owner]} AND d.status IN (${CLAIMABLE_SQL}) AND ${freeSql('d')} AND d.next_attempt_at <= now()
    AND t.state = 'ACTIVE' AND t.cluster_id IS NULL AND ${flowActiveSql('d')}
  ORDER BY d.next_attempt_at LIMIT $3
  FOR UPDATE OF d SKIP LOCKED
)
UPDATE deliveries d SET next_attempt_at = now(), updated_at = now()
  FROM due WHERE d.id = due.id
RETURNING d.id`;

/**
 * After a destination or flow is enabled: enqueues its held deliveries that are due (on
 * the tenant's deliverer pool). Edge (cluster) destinations need none: their agents poll.
 * Never throws: the enable is committed, and the recovery sweep sends them anyway.
 */
export async function requeueHeld(app: AppContext, owner: DeliveryOwner, tenantId: string, id: string): Promise<number> {
  try {
    const { rows } = await app.pool.query<{ id: string }>(requeueSql(owner), [id, tenantId, REQUEUE_LIMIT]);
    if (rows.length > 0) await enqueueDeliveries(app, rows.map((r) => r.id), poolOf(app.config.pools, tenantId));
    return rows.length;
  } catch (err) {
    app.logger.warn('could not re-enqueue held deliveries; the recovery sweep will', { [`${owner}_id`]: id, error: (err as Error).message });
    return 0;
  }
}
