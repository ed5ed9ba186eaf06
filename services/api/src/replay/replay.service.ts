import { retryingDeadlocks, withTransaction, type Pool } from '@hookline/db';
import { flowActiveSql, freeSql, shownStatusSql } from '@hookline/delivery';
import { AppError } from '@hookline/errors';
import type { AppContext } from '../context';
import type { Delivery } from '../lib/models';
import { asModel } from '../lib/rows';
import { enqueueDeliveries, poolOf, type RequeueDeps } from './requeue';

/** A row replaySql returned: the whole delivery too when asked (withRows). */
type ReplayedRow = Record<string, unknown> & { id: string; event_id: string; was_exhausted: boolean };

const REPLAYABLE = ['exhausted', 'delivered'];

/** What retry and replay need: the REST routes and the MCP write tools both call them. */
export interface ReplayDeps extends RequeueDeps {
  pool: Pool;
  /** DEDICATED_POOLS (tenant id → pool): retries and replays go to `deliver.<pool>`. */
  pools?: ReadonlyMap<string, string>;
}

export const replayDepsOf = (app: AppContext): ReplayDeps => ({ pool: app.pool, producer: app.producer, logger: app.logger, pools: app.config.pools });

// Retry: the event's failed and exhausted deliveries that can still be delivered become
// pending, due now (one more attempt each); one in flight (leased) is left to its attempt.
// Their destination must be ACTIVE or DISABLED (then the delivery is held, pending, until
// the destination is enabled: it is not enqueued now, and stored `held`) and their flow ACTIVE, and the
// event's payload retained. Deliveries of a DELETED (or DRAFT) destination, or of a flow
// that is not ACTIVE (DISABLED: the route is switched off; DELETED), are left as they are.
//
// The destination and flow rows are locked FOR SHARE first (lockOwners), in their own
// statements, and the UPDATE (a later statement, so a later snapshot) reads their state as
// it is now: a delete of one either committed before (its deliveries are then skipped) or
// waits for this transaction (and then closes the deliveries it made pending). Without
// the flows' lock a flow delete could close a delivery that retry then reset to pending
// (re-checking only the row). The deliverer's janitor (services/deliverer/src/close-deleted.ts)
// is the safety net: it closes open deliveries of DELETED destinations and flows anyway.
const RETRY_OWNERS_SQL = `
SELECT array_agg(DISTINCT c.destination_id) AS destination_ids, array_agg(DISTINCT c.flow_id) AS flow_ids
  FROM deliveries c WHERE c.tenant_id = $1 AND c.event_id = $2 AND c.status IN ('failed', 'exhausted')`;

//
// The event's retryable deliveries are locked first (`was`, in id order), so that their
// status as it is now (after any concurrent writer committed) is returned with them:
// `was_exhausted` says the retry took one out of the DLQ (retryEvent then marks the event
// `replayed`, as a replay does). Such a delivery becomes `replaying` (SPEC.md: "re-queued
// from the DLQ for retry"), a failed one `pending`; unlike a replay, a retry starts no new
// round of attempts.
const RETRY_SQL = `
UPDATE deliveries d
   SET status = (CASE WHEN was.status = 'exhausted' THEN 'replaying' ELSE 'pending' END)::"DeliveryStatus", next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, updated_at = now(), held = (t.state = 'DISABLED'),
       held_since = CASE WHEN t.state = 'DISABLED' THEN now() END
  FROM destinations t,
       (SELECT c.id, c.status FROM deliveries c
         WHERE c.tenant_id = $1 AND c.event_id = $2 AND c.status IN ('failed', 'exhausted') AND ${freeSql('c')}
         ORDER BY c.id FOR UPDATE) was
 WHERE d.id = was.id
   AND d.destination_id = ANY($3::text[]) AND d.flow_id = ANY($4::text[])
   AND t.id = d.destination_id AND t.state IN ('ACTIVE', 'DISABLED')
   AND ${flowActiveSql('d')}
   AND EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id)
RETURNING d.id, t.state = 'DISABLED' AS held, was.status = 'exhausted' AS was_exhausted`;

/**
 * The events of deliveries a replay or a retry took out of the DLQ become `replayed`
 * (SPEC.md: dlq_queued → replayed → delivered). Only `dlq_queued` ones: SPEC.md allows
 * `replayed` from nowhere else, so a `delivered` event whose delivered delivery is re-sent
 * stays `delivered` (delivered → acked only), and so does a `failed` or an already
 * `replayed` one. Call it in the transaction that re-queued the deliveries.
 */
async function markReplayed(client: Pick<Pool, 'query'>, tenantId: string, eventIds: string[]): Promise<void> {
  await client.query(`UPDATE events SET status = 'replayed', updated_at = now() WHERE id = ANY($1::text[]) AND tenant_id = $2 AND status = 'dlq_queued'`, [eventIds, tenantId]);
}

/**
 * Locks the destination and flow rows FOR SHARE, each in id order, destinations first (as
 * the router and the deletes take them): a delete (or disable) of one of them waits until
 * the transaction ends, or has committed already. Statements run after this one see their
 * state as it is.
 */
async function lockOwners(client: Pick<Pool, 'query'>, tenantId: string, destinationIds: readonly string[], flowIds: readonly string[]): Promise<void> {
  await client.query('SELECT 1 FROM destinations WHERE id = ANY($1::text[]) AND tenant_id = $2 ORDER BY id FOR SHARE', [destinationIds, tenantId]);
  await client.query('SELECT 1 FROM delivery_flows WHERE id = ANY($1::text[]) AND tenant_id = $2 ORDER BY id FOR SHARE', [flowIds, tenantId]);
}

/**
 * Retry (see RETRY_SQL): the ids made pending or replaying; held ones (DISABLED destination) are not
 * enqueued. When one of them was exhausted, a `dlq_queued` event becomes `replayed` (markReplayed).
 */
/** A delivery a retry re-queued, with the status it now has. */
export interface Retried {
  id: string;
  status: 'pending' | 'replaying';
}

export async function retryEvent(app: ReplayDeps, tenantId: string, eventId: string): Promise<string[]> {
  return (await retryEventDeliveries(app, tenantId, eventId)).map((r) => r.id);
}

/** retryEvent, with the status each re-queued delivery now has. */
export async function retryEventDeliveries(app: ReplayDeps, tenantId: string, eventId: string): Promise<Retried[]> {
  const { rows: evt } = await app.pool.query('SELECT 1 FROM events WHERE id = $1 AND tenant_id = $2', [eventId, tenantId]);
  if (!evt.length) throw AppError.notFound('event');
  let rows = await retryOnce(app, tenantId, eventId);
  if (!rows.length) {
    // Nothing retried, yet a delivery may be retryable now: one in flight when RETRY_SQL ran
    // (left to its attempt) whose attempt or lease has ended since. Then once more; if that
    // too retries nothing while one still looks retryable (in flight again meanwhile),
    // 409 delivery_in_flight, never a reason that is not true.
    const why = await explainNoRetry(app, tenantId, eventId);
    if (why) throw why;
    rows = await retryOnce(app, tenantId, eventId);
    if (!rows.length) throw (await explainNoRetry(app, tenantId, eventId)) ?? deliveryInFlight();
  }
  await enqueueDeliveries(app, rows.filter((r) => !r.held).map((r) => r.id), poolOf(app.pools, tenantId));
  return rows.map((r) => ({ id: r.id, status: r.was_exhausted ? 'replaying' : 'pending' }));
}

/** One retry transaction (RETRY_SQL): the deliveries it re-queued, none enqueued yet. */
async function retryOnce(app: ReplayDeps, tenantId: string, eventId: string): Promise<{ id: string; held: boolean; was_exhausted: boolean }[]> {
  // A deadlock victim (against a flow's apply, which locks the flow and then its
  // destination) changed nothing: the whole transaction runs again; enqueues come after it.
  return retryingDeadlocks(() => withTransaction(app.pool, async (client) => {
    const { rows: owners } = await client.query<{ destination_ids: string[] | null; flow_ids: string[] | null }>(RETRY_OWNERS_SQL, [tenantId, eventId]);
    const destinationIds = owners[0]?.destination_ids ?? [];
    const flowIds = owners[0]?.flow_ids ?? [];
    if (!destinationIds.length) return [];
    await lockOwners(client, tenantId, destinationIds, flowIds);
    const { rows: retried } = await client.query<{ id: string; held: boolean; was_exhausted: boolean }>(RETRY_SQL, [tenantId, eventId, destinationIds, flowIds]);
    if (retried.some((r) => r.was_exhausted)) await markReplayed(client, tenantId, [eventId]);
    return retried;
  }));
}

/**
 * Why an event has nothing to retry, as the 409 replay would give for the same cause; or
 * null when one of its failed or exhausted deliveries is retryable now (free, payload
 * retained, destination ACTIVE or DISABLED, flow ACTIVE): it was in flight when the retry
 * ran and its attempt ended since. Each reason is named only when it is true of the
 * deliveries as they are now.
 */
export async function explainNoRetry(app: Pick<ReplayDeps, 'pool'>, tenantId: string, eventId: string): Promise<AppError | null> {
  const { rows } = await app.pool.query<{ retained: boolean; dst_state: string; flow_state: string | null }>(
    `SELECT EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id) AS retained, t.state AS dst_state, f.state AS flow_state
       FROM deliveries d JOIN destinations t ON t.id = d.destination_id LEFT JOIN delivery_flows f ON f.id = d.flow_id
      WHERE d.tenant_id = $1 AND d.event_id = $2 AND d.status IN ('failed', 'exhausted') AND ${freeSql('d')}`,
    [tenantId, eventId],
  );
  if (!rows.length) return new AppError('conflict', 'The event has no failed or exhausted deliveries to retry.');
  if (!rows[0]!.retained) return payloadNotRetained('retried');
  const dstOk = (r: { dst_state: string }) => r.dst_state === 'ACTIVE' || r.dst_state === 'DISABLED';
  const flowOk = (r: { flow_state: string | null }) => r.flow_state === null || r.flow_state === 'ACTIVE';
  if (rows.some((r) => dstOk(r) && flowOk(r))) return null;
  const dst = rows.find((r) => !dstOk(r));
  if (dst) return notActive('destination', dst.dst_state, 'retrying');
  return notActive('flow', rows.find((r) => !flowOk(r))!.flow_state!, 'retrying');
}

/** 409 delivery_in_flight: a delivery looked retryable after each of two retries, which both found it in flight. */
function deliveryInFlight(): AppError {
  return new AppError('conflict', 'A delivery of this event was being sent while the retry ran, and its attempt has ended since; fetch the event and retry again if a delivery is still failed.', {
    reason_code: 'delivery_in_flight',
  });
}

/** 409 payload_not_retained: replay and retry refuse a delivery whose payload was purged. */
function payloadNotRetained(verb: 'replayed' | 'retried'): AppError {
  return new AppError('conflict', `The payload of this event is no longer retained, so the delivery cannot be ${verb}.`, { reason_code: 'payload_not_retained' });
}

/**
 * 409 `destination_not_active` / `flow_not_active`: the delivery's destination or flow is
 * not in a state that delivers (replay: ACTIVE only; retry: a DISABLED destination holds
 * the delivery instead). One shape for replay and retry.
 */
function notActive(kind: 'destination' | 'flow', state: string, action: 'replaying' | 'retrying'): AppError {
  const fix = state === 'DELETED' ? 'it cannot be recovered, so the delivery stays in the DLQ until it is purged' : `enable it before ${action}`;
  return new AppError('conflict', `The ${kind === 'flow' ? 'delivery flow' : 'destination'} is ${state}; ${fix}.`, { reason_code: `${kind}_not_active` });
}

export interface ReplayFilter {
  /** Also return each replayed delivery's row as the replay wrote it (replayOne's answer). */
  withRows?: boolean;
  deliveryIds?: string[];
  destinationId?: string;
  status?: 'exhausted' | 'delivered';
  since?: Date;
  until?: Date;
  limit: number;
}

// The deliveries a replay takes (the filter; $1 tenant, $2 ids, $3 statuses, $4
// destination, $5 since, $6 until): retained payload, ACTIVE destination and flow.
const REPLAY_MATCH = `c.tenant_id = $1
             AND ($2::text[] IS NULL OR c.id = ANY($2::text[]))
             AND c.status = ANY($3::"DeliveryStatus"[])
             AND ($4::text IS NULL OR c.destination_id = $4)
             AND ($5::timestamptz IS NULL OR c.created_at >= $5)
             AND ($6::timestamptz IS NULL OR c.created_at < $6)
             AND EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = c.event_id)
             AND EXISTS (SELECT 1 FROM destinations t WHERE t.id = c.destination_id AND t.state = 'ACTIVE')
             AND ${flowActiveSql('c')}`;

/** Fewest candidates a replay round reads (it updates only as many as are still missing). */
const MIN_ROUND = 100;

interface Candidate {
  id: string;
  destination_id: string;
  flow_id: string;
}

// Up to $7 candidates after id $8 (keyset; NULL: from the start), in id order, as this
// statement sees them (no row locked).
const REPLAY_CANDIDATES_SQL = `
SELECT c.id, c.destination_id, c.flow_id FROM deliveries c
 WHERE ${REPLAY_MATCH}
   AND ($8::text IS NULL OR c.id > $8)
 ORDER BY c.id LIMIT $7`;

// After lockOwners: the candidates ($8) that still match, destination and flow state read
// as they are now (this statement's snapshot is taken after the locks were granted). A
// candidate another transaction holds (being sent, recorded, closed) is skipped.
//
// Each row's status as it was when locked (`was`: after any concurrent writer committed)
// comes back with it: `was_exhausted` says the replay took it out of the DLQ; only those
// rows' events are marked `replayed` (markReplayed). A delivered delivery sent again leaves
// its event as it is, even a `dlq_queued` one whose other delivery is still in the DLQ.
const replaySql = (withRows: boolean) => `
UPDATE deliveries d
   SET status = 'replaying', replay_count = d.replay_count + 1, round_start_attempt = d.attempt_count, next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, held = false, held_since = NULL, updated_at = now()
  FROM (SELECT c.id, c.status FROM deliveries c
         WHERE c.id = ANY($8::text[]) AND ${REPLAY_MATCH}
         ORDER BY c.id LIMIT $7 FOR UPDATE SKIP LOCKED) was
 WHERE d.id = was.id
RETURNING ${withRows ? 'd.*, ' : ''}d.id, d.event_id, was.status = 'exhausted' AS was_exhausted`;

/**
 * Replay: deliveries (exhausted by default) whose payload is still retained and whose
 * destination and flow are ACTIVE go back to `replaying` with a fresh round of attempts;
 * the events of those taken out of the DLQ (exhausted ones) become `replayed` when they were
 * `dlq_queued` (markReplayed); re-sending a delivered delivery leaves its event as it is (a
 * `delivered` one stays `delivered`, a `dlq_queued` one stays in the DLQ's view while its
 * exhausted delivery is there). One transaction, so a
 * replay is all-or-nothing per call.
 * (A delivery of a DISABLED or DELETED flow would never be claimed: it would stay
 * `replaying` for ever.)
 *
 * The candidates' destination and flow rows are locked FOR SHARE (lockOwners) before the
 * UPDATE decides: a concurrent disable or delete either committed first (the UPDATE, a
 * later statement, sees it and leaves those deliveries: a single replay then answers 409
 * as for any inactive destination or flow) or waits for this transaction. Reading the
 * states without the lock, a replay could see a destination ACTIVE while its delete
 * committed (the delete's close skipping the replay's rows as already exhausted), and
 * leave them `replaying` on a DELETED destination for ever. The deliverer's janitor
 * (services/deliverer/src/close-deleted.ts) would close such rows anyway: the safety net.
 *
 * Rounds, in the one transaction: a round takes the next candidates (keyset on the id, as many
 * as are still missing, at least MIN_ROUND), locks their owners, then updates those it can. Candidates
 * skipped (locked by someone else, or no longer matching) are made up for by the next
 * round, so a call replays `limit` deliveries whenever that many can be, stopping at the
 * end of the candidates. Deliveries are locked in id order across rounds; a later round's
 * owners are locked after the earlier rounds' (each round's in id order, destinations
 * first): a deadlock victim runs again as a whole (retryingDeadlocks). The events are
 * marked `replayed` once, after the last round (only those of rows that were exhausted).
 */
export async function replayMatching(app: ReplayDeps, tenantId: string, f: ReplayFilter): Promise<{ id: string; eventId: string; row?: Delivery }[]> {
  const match = [tenantId, f.deliveryIds ?? null, f.status ? [f.status] : f.deliveryIds ? REPLAYABLE : ['exhausted'], f.destinationId ?? null, f.since ?? null, f.until ?? null];
  // With a list, the candidates are at most the listed ids: once all were seen, no round is left.
  const listed = f.deliveryIds ? new Set(f.deliveryIds).size : Infinity;
  const replayed = await retryingDeadlocks(() => withTransaction(app.pool, async (client) => {
    const rows: ReplayedRow[] = [];
    let after: string | null = null;
    let seen = 0;
    while (rows.length < f.limit) {
      const missing = f.limit - rows.length;
      // At least a round's worth of candidates, so a long run of busy rows costs few rounds.
      const take = Math.max(missing, MIN_ROUND);
      const { rows: candidates }: { rows: Candidate[] } = await client.query<Candidate>(REPLAY_CANDIDATES_SQL, [...match, take, after]);
      if (!candidates.length) break;
      await lockOwners(client, tenantId, [...new Set(candidates.map((c) => c.destination_id))], [...new Set(candidates.map((c) => c.flow_id))]);
      const { rows: updated } = await client.query<ReplayedRow>(replaySql(f.withRows === true), [...match, missing, candidates.map((c) => c.id)]);
      rows.push(...updated);
      seen += candidates.length;
      if (candidates.length < take || seen >= listed) break;
      after = candidates[candidates.length - 1]!.id;
    }
    const outOfDlq = [...new Set(rows.filter((r) => r.was_exhausted).map((r) => r.event_id))];
    if (outOfDlq.length) await markReplayed(client, tenantId, outOfDlq);
    return rows.map((r) => ({ id: r.id, eventId: r.event_id, ...(f.withRows ? { row: asModel<Delivery>(r) } : {}) }));
  }));
  await enqueueDeliveries(app, replayed.map((r) => r.id), poolOf(app.pools, tenantId));
  return replayed;
}

/** Why one delivery cannot be replayed, as the precise problem (404, or 409 with a reason). */
async function explainRefusal(app: ReplayDeps, tenantId: string, id: string): Promise<AppError> {
  const { rows } = await app.pool.query<{ status: string; retained: boolean; dst_state: string; flow_state: string | null }>(
    `SELECT ${shownStatusSql('d')} AS status, EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id) AS retained, t.state AS dst_state, f.state AS flow_state
       FROM deliveries d JOIN destinations t ON t.id = d.destination_id LEFT JOIN delivery_flows f ON f.id = d.flow_id
      WHERE d.id = $1 AND d.tenant_id = $2`,
    [id, tenantId],
  );
  const r = rows[0];
  if (!r) return AppError.notFound('delivery');
  if (!r.retained) return payloadNotRetained('replayed');
  if (r.dst_state !== 'ACTIVE') return notActive('destination', r.dst_state, 'replaying');
  if (r.flow_state !== null && r.flow_state !== 'ACTIVE') return notActive('flow', r.flow_state, 'replaying');
  // Replayable, retained and ACTIVE, yet not replayed: replaySql skipped it because another
  // transaction held it (SKIP LOCKED): a concurrent replay or retry of it.
  if (REPLAYABLE.includes(r.status)) {
    return new AppError('conflict', 'A replay or retry of this delivery is already in progress; fetch the delivery to see its outcome.', { reason_code: 'replay_in_progress' });
  }
  return new AppError('conflict', `The delivery is ${r.status}; only exhausted or delivered deliveries can be replayed.`, { reason_code: 'not_replayable', current_status: r.status });
}

/**
 * Replays one delivery; returns its row as the replay wrote it (the answer needs no read after
 * the commit), or throws why it cannot be replayed.
 */
export async function replayOne(app: ReplayDeps, tenantId: string, deliveryId: string): Promise<Delivery> {
  const [replayed] = await replayMatching(app, tenantId, { deliveryIds: [deliveryId], limit: 1, withRows: true });
  if (!replayed?.row) throw await explainRefusal(app, tenantId, deliveryId);
  return replayed.row;
}
