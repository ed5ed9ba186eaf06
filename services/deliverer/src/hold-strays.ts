import type { Pool } from '@hookline/db';
import { CLAIMABLE_SQL } from '@hookline/delivery';

// Strays: open deliveries of a DISABLED destination that are not held. The disable's trigger
// (destinations_state_held) marks the open deliveries it finds; a router routing from a
// flow cache that still says ACTIVE (up to FLOW_CACHE_TTL_MS after the disable, its insert
// committing after the trigger ran) inserts plain `pending` rows with a job. The deliverer
// never claims them (the claim needs an ACTIVE destination), so they stay due for ever at
// the head of the recovery sweep's index, are never held and so never expire. The janitor
// marks them held (held_since now) so they follow the held rules: sent on enable, expired
// after HELD_RETENTION_MS, closed on delete.
//
// Found from the DISABLED destinations (few; destinations has no index on state: that
// small table is read whole), and for each, its not-held deliveries overdue by more than
// STRAY_AFTER_MS, oldest first and $1 at most, through
// deliveries_destination_id_next_attempt_at_open_idx; then the oldest $1 of those. Only
// deliveries of DISABLED destinations are read, not the rows due for ever but never
// claimed nor held (a DISABLED flow's, to an ACTIVE destination) nor a backlog overdue to
// ACTIVE destinations (an outage, a slow drain), which walking the recovery sweep's due
// index from its head read on every run. The open index has no `held`, though: a DISABLED
// destination's overdue held rows are read too, and left (see the README, Janitor).
//
// The status test is that index's predicate as its migration
// (20261121030000_hot_path_indexes) wrote it, 'delivering' included: none is stored since
// 20261121040000_lease_only_claims, and HOLD_STRAYS_SQL checks CLAIMABLE_SQL again. Written
// so, it no longer implies the due index's predicate (… AND NOT held), and the planner
// cannot walk that index (no destination_id) once per DISABLED destination filtering on
// destination_id, which it chose with `status IN (CLAIMABLE_SQL)` when most deliveries were
// one destination's: the whole overdue range, read once per DISABLED destination.
//
// Then, before deciding, their destinations are locked FOR SHARE (in id order): an enable
// (an UPDATE of that row) either committed first (the marking statement, taken after the
// lock, sees the destination ACTIVE and leaves the rows to be sent) or waits for this
// transaction, and its trigger then clears what was marked. Marking without the lock could
// hide a delivery of an ACTIVE destination from the sweep for ever.

/** Overdue this long before a not-held row of a DISABLED destination counts as a stray. */
export const STRAY_AFTER_MS = 5 * 60_000;

export const FIND_STRAYS_SQL = `SELECT s.id, s.destination_id FROM destinations t
  CROSS JOIN LATERAL (
    SELECT o.id, o.destination_id, o.next_attempt_at FROM deliveries o
    WHERE o.destination_id = t.id AND o.status IN ('pending', 'failed', 'replaying', 'delivering') AND NOT o.held
      AND o.next_attempt_at < now() - $2::float8 * interval '1 millisecond'
    ORDER BY o.next_attempt_at LIMIT $1) s
  WHERE t.state = 'DISABLED'
  ORDER BY s.next_attempt_at LIMIT $1`;

const LOCK_DESTINATIONS_SQL = `SELECT id FROM destinations WHERE id = ANY($1::text[]) ORDER BY id FOR SHARE`;

export const HOLD_STRAYS_SQL = `UPDATE deliveries d SET held = true, held_since = now()
  FROM (SELECT o.id FROM deliveries o
         WHERE o.id = ANY($1::text[]) AND o.status IN (${CLAIMABLE_SQL}) AND NOT o.held
           AND EXISTS (SELECT 1 FROM destinations t WHERE t.id = o.destination_id AND t.state = 'DISABLED')
         ORDER BY o.id FOR UPDATE OF o SKIP LOCKED) m
 WHERE d.id = m.id`;

/** Marks up to `limit` strays held (call it inside a transaction); returns how many. */
export async function holdStrays(db: Pick<Pool, 'query'>, limit: number, strayAfterMs = STRAY_AFTER_MS): Promise<number> {
  const { rows } = await db.query<{ id: string; destination_id: string }>(FIND_STRAYS_SQL, [limit, strayAfterMs]);
  if (rows.length === 0) return 0;
  await db.query(LOCK_DESTINATIONS_SQL, [[...new Set(rows.map((r) => r.destination_id))]]);
  return (await db.query(HOLD_STRAYS_SQL, [rows.map((r) => r.id)])).rowCount ?? 0;
}
