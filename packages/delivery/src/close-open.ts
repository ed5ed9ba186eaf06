import type { Pool } from '@hookline/db';
import { CLAIMABLE_SQL } from './lease';

// Closing the open deliveries (pending, failed, replaying) of a DELETED destination or
// flow: `exhausted` (the DLQ, purged after DLQ_RETENTION_MS like any other), held false,
// lease dropped, a last_error that says why, and their events' status rolled up as
// outcomes do. One definition for both callers:
//
// - the api's delete (services/api/src/lifecycle/open-deliveries.ts), inside the delete's
//   transaction: every open delivery of that one destination or flow, waiting for locks;
// - the deliverer's janitor (services/deliverer/src/close-deleted.ts), the safety net for
//   deliveries created or reopened after the delete closed them (a router routing from a
//   stale flow cache inserts plain `pending` rows): those of any DELETED destination or
//   flow, a bounded batch per run, skipping rows locked by someone else.
//
// Every open delivery is closed, including one under a live lease (a send in flight): its
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

/**
 * Which open deliveries a close takes ($1 is always the last_error):
 * - `one`: those of one destination or flow ($2 its id, $3 its tenant), all of them, locks waited for;
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
// with those open backlogs, not with the deliveries table's history. They are sorted by
// `d.id || ''` (the same order as d.id): ordered by d.id with a LIMIT, the planner may
// walk the primary key in id order to skip the sort, i.e. read the whole table when there
// is nothing to close (seen with an open backlog elsewhere).
//
// `deleted` looks only at owners deleted within $3 milliseconds (their updated_at), or at
// every DELETED owner when $3 is null: stranded rows appear within seconds of a delete (a
// stale flow cache), so after one full pass the janitor needs only the recent ones, and
// the open backlogs of tenants that deleted a flow long ago are not read every run.
const RECENT = (alias: string): string => `($3::float8 IS NULL OR ${alias}.updated_at > now() - $3::float8 * interval '1 millisecond')`;

const SELECT_OPEN: Record<CloseScope, Record<DeliveryOwner, string>> = {
  one: {
    destination: `SELECT d.id FROM deliveries d
  WHERE d.destination_id = $2 AND d.tenant_id = $3 AND d.status IN (${CLAIMABLE_SQL})
  ORDER BY d.id FOR UPDATE`,
    flow: `SELECT d.id FROM deliveries d
  WHERE d.flow_id = $2 AND d.tenant_id = $3 AND d.status IN (${CLAIMABLE_SQL})
  ORDER BY d.id FOR UPDATE`,
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

/** SQL: closes the open deliveries `scope` and `owner` select (see CloseScope); returns their event ids. */
export const closeOpenSql = (scope: CloseScope, owner: DeliveryOwner): string => `
WITH open AS (
  ${SELECT_OPEN[scope][owner]}
)
UPDATE deliveries d
   SET status = 'exhausted', exhausted_at = now(), lease_until = NULL, lease_owner = NULL, held = false, last_error = $1, updated_at = now()
  FROM open WHERE d.id = open.id
RETURNING d.event_id`;

// The events' status from all their deliveries, exactly as outcomes roll it up: the
// outcome function called with no attempts and no outcomes only locks the events (in id
// order) and derives their status (any exhausted -> dlq_queued, ...). One definition of
// the roll-up, in migration 20261121050000_outcomes_in_one_call.
export const ROLL_UP_EVENTS_SQL = `SELECT record_delivery_outcomes('{}'::text[], '{}'::text[], '{}'::text[], '{}'::int[], '{}'::int[], '{}'::text[], '{}'::text[],
  '{}'::text[], '{}'::text[], '{}'::timestamptz[], '{}'::int[], '{}'::text[], '{}'::int[], '{}'::text[], NULL::text, $1::text[])`;

async function closeAndRollUp(db: Queryable, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ event_id: string }>(sql, params);
  if (rows.length === 0) return 0;
  await db.query(ROLL_UP_EVENTS_SQL, [[...new Set(rows.map((r) => r.event_id))]]);
  return rows.length;
}

/**
 * Closes the open deliveries of one destination or flow being deleted (call it inside the
 * delete's transaction) and rolls their events' status up. Returns how many.
 */
export function closeOpenDeliveries(db: Queryable, owner: DeliveryOwner, tenantId: string, id: string): Promise<number> {
  return closeAndRollUp(db, closeOpenSql('one', owner), [DELETED_ERROR[owner], id, tenantId]);
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
