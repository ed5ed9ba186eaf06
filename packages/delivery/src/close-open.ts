import type { Pool } from '@hookline/db';
import { CLAIMABLE_SQL } from './lease';

// Closing the open deliveries (pending, failed, replaying) of a DELETED destination or
// flow: `exhausted` (the DLQ, purged after DLQ_RETENTION_MS like any other), held false
// (held_since NULL), lease dropped, a last_error that says why, and their events' status
// rolled up as outcomes do. One definition for both callers:
//
// - the api's delete (services/api/src/lifecycle/open-deliveries.ts), inside the delete's
//   transaction: the open deliveries of that one destination or flow, at most
//   DELETE_CLOSE_INLINE_LIMIT of them (lowest ids first), waiting for locks;
// - the deliverer's janitor (services/deliverer/src/close-deleted.ts): what the delete left
//   beyond that limit, and deliveries created or reopened after the delete closed them (a
//   router routing from a stale flow cache inserts plain `pending` rows): those of any
//   DELETED destination or flow, in bounded batches, skipping rows locked by someone else.
//
// The janitor also moves held deliveries past HELD_RETENTION_MS to the DLQ with the same
// update and roll-up (closeSql below; services/deliverer/src/expire-held.ts), with
// last_error HELD_EXPIRED_ERROR.
//
// Every open delivery a close selects is closed, including one under a live lease (a send in flight): its
// outcome, recorded later, is then refused by record_delivery_outcomes' guard (lease owner
// and a claimable status; the lease is dropped here), so it stays exhausted; its attempt is
// still recorded in the history. Rows are locked in id order.

type Queryable = Pick<Pool, 'query'>;

export type DeliveryOwner = 'destination' | 'flow';

/** `deliveries.last_error` of a delivery closed because its destination or flow was deleted. */
export const DELETED_ERROR: Record<DeliveryOwner, string> = {
  destination: 'destination_deleted: the destination was deleted, so this delivery will not be sent',
  flow: 'flow_deleted: the delivery flow was deleted, so this delivery will not be sent',
};

/** `deliveries.last_error` of a held delivery moved to the DLQ by the deliverer's janitor after HELD_RETENTION_MS. */
export const HELD_EXPIRED_ERROR =
  'held_expired: the destination stayed DISABLED longer than the held retention, so this delivery was moved to the DLQ';

/**
 * Which open deliveries a close takes ($1 is always the last_error):
 * - `one`: those of one destination or flow ($2 its id, $3 its tenant), at most $4 (null:
 *   all), lowest ids first, locks waited for;
 * - `deleted`: those of any DELETED destination or flow ($3: deleted within that many ms, or
 *   null for all), at most $2, locked rows skipped.
 */
export type CloseScope = 'one' | 'deleted';

// The owner's deliveries. A destination's by the open-deliveries partial index
// (destination_id, next_attempt_at) WHERE status IN (pending, failed, replaying,
// delivering). A flow's deliveries have no index of their own (flow_id is only the second
// column of the unique (event_id, flow_id) key): they are found among their tenant's open
// ones by (tenant_id, status, id); a flow may also have been pointed at another destination
// after some were created, so the destination index cannot stand in for it.
//
// `deleted` finds the DELETED owners first (ARRAY(…): one read of destinations /
// delivery_flows, small tables with no index on state), then their open deliveries by an
// index condition on that list: per DELETED destination one probe of the open partial
// index (cheap however many there are); for DELETED flows, the open deliveries of the
// tenants that have one, by (tenant_id, status, id), or the open partial index walked
// whole when the planner finds that cheaper: either way open rows only, and the cost grows
// with those open backlogs, not with the deliveries table's history. Both scopes sort by
// `d.id || ''` (the same order as d.id): ordered by d.id with a LIMIT, the planner may
// walk the primary key in id order to skip the sort, i.e. read the whole table when there
// is nothing to close (seen with an open backlog elsewhere).
//
// `deleted` looks only at owners deleted within $3 milliseconds (their updated_at), or at
// every DELETED owner when $3 is null: stranded rows appear within seconds of a delete (a
// stale flow cache) and a delete's own backlog is taken while it is recent, so after a
// full pass the janitor needs only the recent ones (and a full pass again after a run that
// ended on a full batch), and the open backlogs of tenants that deleted a flow long ago
// are not read every run.
const RECENT = (alias: string): string => `($3::float8 IS NULL OR ${alias}.updated_at > now() - $3::float8 * interval '1 millisecond')`;

const SELECT_OPEN: Record<CloseScope, Record<DeliveryOwner, string>> = {
  one: {
    destination: `SELECT d.id FROM deliveries d
  WHERE d.destination_id = $2 AND d.tenant_id = $3 AND d.status IN (${CLAIMABLE_SQL})
  ORDER BY d.id || '' LIMIT $4 FOR UPDATE`,
    flow: `SELECT d.id FROM deliveries d
  WHERE d.flow_id = $2 AND d.tenant_id = $3 AND d.status IN (${CLAIMABLE_SQL})
  ORDER BY d.id || '' LIMIT $4 FOR UPDATE`,
  },
  deleted: {
    destination: `SELECT d.id FROM deliveries d
  WHERE d.destination_id = ANY (ARRAY(SELECT t.id FROM destinations t WHERE t.state = 'DELETED' AND ${RECENT('t')})) AND d.status IN (${CLAIMABLE_SQL})
  ORDER BY d.id || '' LIMIT $2 FOR UPDATE SKIP LOCKED`,
    flow: `SELECT d.id FROM deliveries d
  WHERE d.tenant_id = ANY (ARRAY(SELECT DISTINCT f.tenant_id FROM delivery_flows f WHERE f.state = 'DELETED' AND ${RECENT('f')})) AND d.status IN (${CLAIMABLE_SQL})
    AND d.flow_id = ANY (ARRAY(SELECT f.id FROM delivery_flows f WHERE f.state = 'DELETED' AND ${RECENT('f')}))
  ORDER BY d.id || '' LIMIT $2 FOR UPDATE SKIP LOCKED`,
  },
};

/**
 * SQL: closes (moves to the DLQ) the deliveries `select` returns (a locking SELECT of ids;
 * $1 is the last_error); returns their event ids. Roll their events up afterwards
 * (ROLL_UP_EVENTS_SQL, closeAndRollUp).
 */
export const closeSql = (select: string): string => `
WITH open AS (
  ${select}
)
UPDATE deliveries d
   SET status = 'exhausted', exhausted_at = now(), lease_until = NULL, lease_owner = NULL, held = false, held_since = NULL, last_error = $1, updated_at = now()
  FROM open WHERE d.id = open.id
RETURNING d.event_id`;

/** SQL: closes the open deliveries `scope` and `owner` select (see CloseScope); returns their event ids. */
export const closeOpenSql = (scope: CloseScope, owner: DeliveryOwner): string => closeSql(SELECT_OPEN[scope][owner]);

// The events' status from all their deliveries, exactly as outcomes roll it up: the
// outcome function called with no attempts and no outcomes only locks the events (in id
// order) and derives their status (any exhausted -> dlq_queued, ...). One definition of
// the roll-up, in migration 20261121050000_outcomes_in_one_call.
export const ROLL_UP_EVENTS_SQL = `SELECT record_delivery_outcomes('{}'::text[], '{}'::text[], '{}'::text[], '{}'::int[], '{}'::int[], '{}'::text[], '{}'::text[],
  '{}'::text[], '{}'::text[], '{}'::timestamptz[], '{}'::int[], '{}'::text[], '{}'::int[], '{}'::text[], NULL::text, $1::text[])`;

/** Runs a closeSql statement, then rolls the events of what it closed up (same transaction: call it inside one). Returns how many it closed. */
export async function closeAndRollUp(db: Queryable, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ event_id: string }>(sql, params);
  if (rows.length === 0) return 0;
  await db.query(ROLL_UP_EVENTS_SQL, [[...new Set(rows.map((r) => r.event_id))]]);
  return rows.length;
}

/**
 * Closes the open deliveries of one destination or flow being deleted (call it inside the
 * delete's transaction), at most `limit` of them (lowest ids first; null: all), and rolls
 * their events' status up. Returns how many.
 */
export function closeOpenDeliveries(db: Queryable, owner: DeliveryOwner, tenantId: string, id: string, limit: number | null = null): Promise<number> {
  return closeAndRollUp(db, closeOpenSql('one', owner), [DELETED_ERROR[owner], id, tenantId, limit]);
}

/**
 * Closes up to `limit` open deliveries of DELETED destinations (owner 'destination') or
 * DELETED flows ('flow'), skipping locked rows, and rolls their events' status up; only
 * owners deleted within `deletedWithinMs` when given (null: every DELETED owner). Call it
 * inside a transaction (the close and the roll-up commit together). Returns how many.
 */
export function closeDeletedOwnersDeliveries(db: Queryable, owner: DeliveryOwner, limit: number, deletedWithinMs: number | null = null): Promise<number> {
  return closeAndRollUp(db, closeOpenSql('deleted', owner), [DELETED_ERROR[owner], limit, deletedWithinMs]);
}
