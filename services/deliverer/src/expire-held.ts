import type { Pool } from '@hookline/db';
import { CLAIMABLE_SQL, closeAndRollUp, closeSql, HELD_EXPIRED_ERROR } from '@hookline/delivery';
import { holdStrays } from './hold-strays';

// Held deliveries expire. An open delivery of a DISABLED destination is held (`held`,
// migration 20261124000000_held_deliveries) until the destination is enabled (sent) or
// deleted (DLQ). One that stays DISABLED would keep them, with their payloads, for ever:
// the janitor moves those held for more than HELD_RETENTION_MS to the DLQ, exactly as a
// delete's close does (closeSql in @hookline/delivery: `exhausted`, exhausted_at now, lease
// dropped, held false and held_since NULL, events rolled up by ROLL_UP_EVENTS_SQL), with
// last_error HELD_EXPIRED_ERROR. From the DLQ they follow the usual rules: purged after
// DLQ_RETENTION_MS; a retry holds them again while the destination is DISABLED, for another
// HELD_RETENTION_MS from the retry, and sends them once it is ACTIVE.
//
// Measured from held_since (migration 20261125000000_held_expiry), when `held` last became
// true: set by the trigger on destinations.state when the destination is disabled, by the
// router when it routes to a DISABLED destination and by retry when it reopens a delivery
// into one. Not from created_at: a delivery created long ago (a long retry schedule, a
// replay, a retry from the DLQ) held by a destination disabled a minute ago is not expired
// at the next run. Rows held before that migration got the migration's time.
//
// The oldest expired ones first, $2 at most: the inner SELECT walks the partial index
// deliveries_held_since_held_idx (held_since) WHERE held AND status IN (pending, failed,
// replaying) from its start and stops after $2 rows or at the first row not yet expired;
// nothing else is read, however many rows are held and however long the history. It runs
// once, inside ARRAY(…) (an init plan): as `d.id IN (…)` the planner could rerun it for
// every expired row it walked the same index for (seen: 50 expired rows, 800 read). Only
// deliveries of a destination that is DISABLED now: a DELETED destination's held rows
// (left by a delete beyond its inline limit) are closed by the janitor's destination pass
// as destination_deleted. Those rows are then locked in id order (as every statement that
// locks many deliveries does), rows someone else holds skipped (taken at a later run), and
// `held`, the status and held_since checked again on the locked row: an enable that
// committed meanwhile cleared `held` (that delivery is left to be sent), and an enable and
// a disable again restarted held_since.
const SELECT_EXPIRED_HELD_SQL = `SELECT d.id FROM deliveries d
  WHERE d.id = ANY (ARRAY(
    SELECT o.id FROM deliveries o
    WHERE o.held AND o.status IN (${CLAIMABLE_SQL}) AND o.held_since < now() - $3::float8 * interval '1 millisecond'
      AND EXISTS (SELECT 1 FROM destinations t WHERE t.id = o.destination_id AND t.state = 'DISABLED')
    ORDER BY o.held_since LIMIT $2
  )) AND d.held AND d.status IN (${CLAIMABLE_SQL}) AND d.held_since < now() - $3::float8 * interval '1 millisecond'
  ORDER BY d.id FOR UPDATE OF d SKIP LOCKED`;

/** SQL: moves up to $2 deliveries held for more than $3 ms to the DLQ ($1 the last_error); returns their event ids. */
export const EXPIRE_HELD_SQL = closeSql(SELECT_EXPIRED_HELD_SQL);

// Held rows without held_since: a router or api replica of a version before migration
// 20261125000000_held_expiry, still running during a rolling deploy, stores `held` without
// it. The expiry (held_since < …) would never take them; they get the janitor's time
// instead (their retention counts from then, as the migration did for the rows held
// before it), up to $1 per batch, through the same partial index's NULL end (nothing read
// when there are none). Rows someone else holds are skipped (stamped at a later batch);
// held, the status and held_since are checked again on the locked row.
export const STAMP_HELD_SINCE_SQL = `UPDATE deliveries d SET held_since = now()
  FROM (SELECT o.id FROM deliveries o
         WHERE o.held AND o.status IN (${CLAIMABLE_SQL}) AND o.held_since IS NULL
         LIMIT $1 FOR UPDATE SKIP LOCKED) m
 WHERE d.id = m.id`;

type Queryable = Pick<Pool, 'query'>;

/**
 * Moves up to `limit` deliveries held for more than `retentionMs` to the DLQ and rolls
 * their events up, after marking strays held (hold-strays.ts) and stamping held_since on
 * up to `limit` held rows an older replica left without it (STAMP_HELD_SINCE_SQL). Call it
 * inside a transaction. Returns how many it moved.
 */
export async function expireHeldDeliveries(db: Queryable, limit: number, retentionMs: number): Promise<number> {
  await holdStrays(db, limit);
  await db.query(STAMP_HELD_SINCE_SQL, [limit]);
  return closeAndRollUp(db, EXPIRE_HELD_SQL, [HELD_EXPIRED_ERROR, limit, retentionMs]);
}
