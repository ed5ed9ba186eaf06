import { newId, retryingDeadlocks, type Pool } from '@hookline/db';
import { CLAIMABLE_SQL } from './lease';
import type { Decision } from './retry-policy';
import type { SendResult } from './send-result';

export interface Outcome {
  deliveryId: string;
  tenantId: string;
  eventId: string;
  attemptNumber: number;
  result: SendResult;
  decision: Decision;
  /**
   * The attempt row's id. A writer that may run the same write again (a retry after the
   * connection was lost, when its COMMIT may have landed) sets it once, before the first
   * try, so that every try names the same row: record_delivery_outcomes inserts an id only
   * once (migration 20261201000000_attempts_once). Unset: a new id for each call.
   */
  attemptId?: string;
}

// The attempts, the deliveries' outcomes and their events' status are written by one
// function call (migration 20261121050000_outcomes_in_one_call, where the statements and
// their reasons are): one round trip, atomic on its own, where the transaction of five
// statements it replaces took five.
const RECORD_SQL = `SELECT record_delivery_outcomes($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::text[], $7::text[],
  $8::text[], $9::text[], $10::timestamptz[], $11::int[], $12::text[], $13::int[], $14::text[], $15::text, $16::text[])`;

export interface RecordOptions {
  /** `delivery_attempts.via`: who made the attempt. */
  via?: 'direct' | 'edge';
  /**
   * Record only the deliveries the lease still holds. Edge reports use it: a repeated
   * report, or one for a lease that expired and went to another agent, changes nothing.
   * The deliverer records every attempt it made, held or not.
   */
  onlyHeld?: boolean;
}

/** Outcomes of deliveries claimed under one lease owner. */
export interface OwnedOutcomes {
  leaseOwner: string;
  outcomes: Outcome[];
}

/**
 * Writes a batch's attempts and outcomes, then the status of their events, atomically.
 * The events are locked first (in id order) so that the aggregate is read after any
 * concurrent batch of the same event has committed: the last writer sees all.
 * Returns the outcomes written.
 */
export async function recordOutcomes(pool: Pool, leaseOwner: string, all: Outcome[], opts: RecordOptions = {}): Promise<Outcome[]> {
  return recordOwnedOutcomes(pool, [{ leaseOwner, outcomes: all }], opts);
}

/**
 * recordOutcomes for several claims at once (each row guarded by its own lease owner):
 * the deliverer merges the outcomes of concurrent jobs into one transaction.
 */
export async function recordOwnedOutcomes(pool: Pool, groups: OwnedOutcomes[], opts: RecordOptions = {}): Promise<Outcome[]> {
  const owned = groups.flatMap((g) => g.outcomes.map((o) => ({ o, owner: g.leaseOwner })));
  if (owned.length === 0) return [];
  // A deadlock victim (a lifecycle change locking the same deliveries) changed nothing: the
  // call (one statement) or the edge transaction runs again, for every caller alike.
  if (!opts.onlyHeld) {
    await retryingDeadlocks(() => pool.query(RECORD_SQL, recordParams(owned, opts)));
    return owned.map((x) => x.o);
  }
  return retryingDeadlocks(() => recordHeldOutcomes(pool, owned, opts));
}

/** Edge reports: only the deliveries whose lease still holds, locked before they are written. */
async function recordHeldOutcomes(pool: Pool, owned: { o: Outcome; owner: string }[], opts: RecordOptions): Promise<Outcome[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows: held } = await client.query<{ id: string }>(
      `SELECT d.id FROM deliveries d JOIN unnest($1::text[], $2::text[]) AS u(id, owner) ON d.id = u.id AND d.lease_owner = u.owner
       WHERE d.status IN (${CLAIMABLE_SQL}) ORDER BY d.id FOR UPDATE OF d`,
      [owned.map((x) => x.o.deliveryId), owned.map((x) => x.owner)],
    );
    const ids = new Set(held.map((r) => r.id));
    const rows = owned.filter((x) => ids.has(x.o.deliveryId));
    if (rows.length > 0) await client.query(RECORD_SQL, recordParams(rows, opts));
    await client.query('COMMIT');
    return rows.map((x) => x.o);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Delivery id order (then attempt number), as PostgreSQL's `ORDER BY id` sorts ids (lower-case ASCII). */
const byDeliveryId = (a: { o: Outcome }, b: { o: Outcome }): number =>
  a.o.deliveryId < b.o.deliveryId ? -1 : a.o.deliveryId > b.o.deliveryId ? 1 : a.o.attemptNumber - b.o.attemptNumber;

/**
 * The function's arguments: one array per column, in delivery id order whatever the
 * outcomes' order (completion order, merged jobs). The function's UPDATE of deliveries
 * (nested loops over the array, under the index-plan settings) and its attempts' foreign
 * key checks (FOR KEY SHARE on each delivery) lock rows in array order; every other
 * statement that locks many deliveries (a destination's disable, enable and delete,
 * through the trigger on destinations.state or closeOpenDeliveries; the edge reports'
 * SELECT … FOR UPDATE) takes them in id order too, which makes a lock cycle between
 * them unlikely but not impossible (the foreign key checks lock at the statement's end,
 * after the UPDATE's rows; a row whose lease was lost is locked only then): a deadlock
 * victim is run again (recordOwnedOutcomes). Every caller of the function builds its
 * arguments here.
 */
function recordParams(unsorted: ReadonlyArray<{ o: Outcome; owner: string }>, opts: RecordOptions): unknown[] {
  const rows = [...unsorted].sort(byDeliveryId);
  const col = <T>(f: (o: Outcome) => T): T[] => rows.map((x) => f(x.o));
  return [
    col((o) => o.attemptId ?? newId('att')),
    col((o) => o.tenantId),
    col((o) => o.deliveryId),
    col((o) => o.attemptNumber),
    col((o) => o.result.statusCode),
    col((o) => o.result.responseBody),
    col((o) => (o.result.responseHeaders ? JSON.stringify(o.result.responseHeaders) : null)),
    col((o) => o.result.errorKind),
    col((o) => o.result.error),
    col((o) => o.result.startedAt),
    col((o) => o.result.durationMs),
    col((o) => o.decision.status),
    col((o) => (o.decision.status === 'failed' ? Math.round(o.decision.delayMs) : 0)),
    rows.map((x) => x.owner),
    opts.via ?? 'direct',
    [...new Set(col((o) => o.eventId))],
  ];
}
