import type { Pool } from '@hookline/db';
import { flowActiveSql, freeSql, shownStatusSql } from '@hookline/delivery';
import { AppError } from '@hookline/errors';
import type { AppContext } from '../context';
import { enqueueDeliveries, poolOf, type RequeueDeps } from './requeue';

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
// The destinations are locked FOR SHARE first and read as they are now: a delete of one
// either committed before (its deliveries are then skipped) or waits for this statement
// (and then closes the deliveries it made pending).
const RETRY_SQL = `
WITH dst AS (
  SELECT t.id, t.state FROM destinations t
   WHERE t.id IN (SELECT c.destination_id FROM deliveries c WHERE c.tenant_id = $1 AND c.event_id = $2 AND c.status IN ('failed', 'exhausted'))
   ORDER BY t.id FOR SHARE
)
UPDATE deliveries d
   SET status = 'pending', next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, updated_at = now(), held = (dst.state = 'DISABLED')
  FROM dst
 WHERE d.tenant_id = $1 AND d.event_id = $2 AND d.status IN ('failed', 'exhausted') AND ${freeSql('d')}
   AND dst.id = d.destination_id AND dst.state IN ('ACTIVE', 'DISABLED')
   AND ${flowActiveSql('d')}
   AND EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id)
RETURNING d.id, dst.state = 'DISABLED' AS held`;

/** Retry (see RETRY_SQL): the ids made pending; held ones (DISABLED destination) are not enqueued. */
export async function retryEvent(app: ReplayDeps, tenantId: string, eventId: string): Promise<string[]> {
  const { rows: evt } = await app.pool.query('SELECT 1 FROM events WHERE id = $1 AND tenant_id = $2', [eventId, tenantId]);
  if (!evt.length) throw AppError.notFound('event');
  const { rows } = await app.pool.query<{ id: string; held: boolean }>(RETRY_SQL, [tenantId, eventId]);
  if (!rows.length) throw await explainNoRetry(app, tenantId, eventId);
  await enqueueDeliveries(app, rows.filter((r) => !r.held).map((r) => r.id), poolOf(app.pools, tenantId));
  return rows.map((r) => r.id);
}

/** Why an event has nothing to retry, as the 409 replay would give for the same cause. */
async function explainNoRetry(app: ReplayDeps, tenantId: string, eventId: string): Promise<AppError> {
  const { rows } = await app.pool.query<{ retained: boolean; dst_state: string; flow_state: string | null }>(
    `SELECT EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id) AS retained, t.state AS dst_state, f.state AS flow_state
       FROM deliveries d JOIN destinations t ON t.id = d.destination_id LEFT JOIN delivery_flows f ON f.id = d.flow_id
      WHERE d.tenant_id = $1 AND d.event_id = $2 AND d.status IN ('failed', 'exhausted') AND ${freeSql('d')}`,
    [tenantId, eventId],
  );
  if (!rows.length) return new AppError('conflict', 'The event has no failed or exhausted deliveries to retry.');
  if (!rows[0]!.retained) return payloadNotRetained('retried');
  const dst = rows.find((r) => r.dst_state !== 'ACTIVE' && r.dst_state !== 'DISABLED');
  if (dst) return notActive('destination', dst.dst_state, 'retrying');
  return notActive('flow', rows.find((r) => r.flow_state !== null && r.flow_state !== 'ACTIVE')?.flow_state ?? 'not ACTIVE', 'retrying');
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
  deliveryIds?: string[];
  destinationId?: string;
  status?: 'exhausted' | 'delivered';
  since?: Date;
  until?: Date;
  limit: number;
}

/**
 * Replay: deliveries (exhausted by default) whose payload is still retained and whose
 * destination and flow are ACTIVE go back to `replaying` with a fresh round of attempts;
 * their events become `replayed`. One statement, so a replay is all-or-nothing per call.
 * (A delivery of a DISABLED or DELETED flow would never be claimed: it would stay
 * `replaying` for ever.)
 */
export async function replayMatching(app: ReplayDeps, tenantId: string, f: ReplayFilter): Promise<{ id: string; eventId: string }[]> {
  const client = await app.pool.connect();
  let replayed: { id: string; eventId: string }[];
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string; event_id: string }>(
      `UPDATE deliveries d
          SET status = 'replaying', replay_count = d.replay_count + 1, next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, held = false, updated_at = now()
        WHERE d.id IN (
          SELECT c.id FROM deliveries c
           WHERE c.tenant_id = $1
             AND ($2::text[] IS NULL OR c.id = ANY($2::text[]))
             AND c.status = ANY($3::"DeliveryStatus"[])
             AND ($4::text IS NULL OR c.destination_id = $4)
             AND ($5::timestamptz IS NULL OR c.created_at >= $5)
             AND ($6::timestamptz IS NULL OR c.created_at < $6)
             AND EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = c.event_id)
             AND EXISTS (SELECT 1 FROM destinations t WHERE t.id = c.destination_id AND t.state = 'ACTIVE')
             AND ${flowActiveSql('c')}
           ORDER BY c.id LIMIT $7 FOR UPDATE SKIP LOCKED)
        RETURNING d.id, d.event_id`,
      [tenantId, f.deliveryIds ?? null, f.status ? [f.status] : f.deliveryIds ? REPLAYABLE : ['exhausted'], f.destinationId ?? null, f.since ?? null, f.until ?? null, f.limit],
    );
    if (rows.length) {
      await client.query(`UPDATE events SET status = 'replayed', updated_at = now() WHERE id = ANY($1::text[])`, [[...new Set(rows.map((r) => r.event_id))]]);
    }
    await client.query('COMMIT');
    replayed = rows.map((r) => ({ id: r.id, eventId: r.event_id }));
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
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
  return new AppError('conflict', `The delivery is ${r.status}; only exhausted or delivered deliveries can be replayed.`, { reason_code: 'not_replayable', current_status: r.status });
}

/** Replays one delivery; returns its event's id, or throws why it cannot be replayed. */
export async function replayOne(app: ReplayDeps, tenantId: string, deliveryId: string): Promise<string> {
  const [replayed] = await replayMatching(app, tenantId, { deliveryIds: [deliveryId], limit: 1 });
  if (!replayed) throw await explainRefusal(app, tenantId, deliveryId);
  return replayed.eventId;
}
