import { CLAIMABLE_SQL, closeOpenDeliveries, DELETED_ERROR, flowActiveSql, freeSql, type DeliveryOwner } from '@hookline/delivery';
import type { AppContext } from '../context';
import { enqueueDeliveries, poolOf } from '../replay/requeue';

// What a destination's or a flow's lifecycle does to its deliveries (SPEC.md: DISABLED =
// delivery stopped, re-enable = delivery resumes, DELETED = removed for good).
//
// - Disabled: its open deliveries (pending, failed, replaying) are held: the deliverer's
//   claim and recovery sweep and the edge leases skip them, and the router keeps creating
//   deliveries for an ACTIVE flow to a DISABLED destination. A destination's (not a
//   flow's) are also marked `held` (by the trigger on destinations.state, migration
//   20261124000000_held_deliveries, in the state change's transaction; the router and
//   retry store new ones so), which keeps them out of the recovery sweep's index.
// - Enabled: the same trigger clears `held` in the enable's transaction, then the deliveries that are
//   due are handed to the deliverer at once (requeueHeld), instead of waiting for the
//   recovery sweep's RECOVERY_AFTER_MS.
// - Held too long: the deliverer's janitor moves a delivery held for more than
//   HELD_RETENTION_MS (7 days, counted from held_since: when it was last held, not its
//   created_at) to the DLQ, last_error held_expired: …
//   (services/deliverer/src/expire-held.ts); a retry from there follows the usual rules.
// - Deleted: its open deliveries are closed in the delete's transaction (closeOpen), at
//   most DELETE_CLOSE_INLINE_LIMIT of them (10,000 by default, lowest ids first; about 1 s
//   of locks and of the request's wait): `exhausted` (the DLQ, purged after
//   DLQ_RETENTION_MS like any other), with a last_error that says why, and their events'
//   status rolled up as outcomes do. The rest, and any that appear after the delete (a
//   stale router's insert), are closed the same way by the deliverer's janitor
//   (services/deliverer/src/close-deleted.ts), woken by the delete's announcement when
//   some were left, then up to 20,000 per JANITOR_INTERVAL_MS. Until then they stay open
//   but are never sent: the deliverer's claim (claim-deliveries.ts CLAIM_SQL) and
//   recovery sweep (recover-deliveries.ts SWEEP_SQL), the edge leases (edge/lease-work.ts)
//   and the edge wait sweep take only deliveries whose destination is ACTIVE and whose
//   flow is not DISABLED or DELETED (flowActiveSql), and retry and replay refuse a DELETED
//   destination or flow.

// The close (SQL and roll-up) is defined once in @hookline/delivery (close-open.ts): the
// deliverer's janitor closes with the same definition the open deliveries of DELETED
// destinations and flows that the delete left beyond its limit or that appear after it
// (a router routing from a stale flow cache, a replay or retry that raced the delete).
export { closeOpenDeliveries, DELETED_ERROR, type DeliveryOwner };

// The owner's deliveries: a destination's by its open-deliveries index (destination_id,
// next_attempt_at); a flow's among the tenant's open ones (tenant_id, status, id), since
// a flow may have been pointed at another destination after some were created.
const OWNED: Record<DeliveryOwner, string> = {
  destination: 'd.destination_id = $1 AND d.tenant_id = $2',
  flow: 'd.flow_id = $1 AND d.tenant_id = $2',
};

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
