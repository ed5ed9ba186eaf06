import type { Pool } from '@hookline/db';
import { freeSql, shownStatusSql } from '@hookline/delivery';
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

/** Retry: the event's failed/exhausted deliveries become due now (one more attempt each); one in flight (held) is left to its attempt. */
export async function retryEvent(app: ReplayDeps, tenantId: string, eventId: string): Promise<string[]> {
  const { rows: evt } = await app.pool.query('SELECT 1 FROM events WHERE id = $1 AND tenant_id = $2', [eventId, tenantId]);
  if (!evt.length) throw AppError.notFound('event');
  const { rows } = await app.pool.query<{ id: string }>(
    `UPDATE deliveries SET status = 'pending', next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, updated_at = now()
      WHERE tenant_id = $1 AND event_id = $2 AND status IN ('failed', 'exhausted') AND ${freeSql('deliveries')} RETURNING id`,
    [tenantId, eventId],
  );
  if (!rows.length) throw new AppError('conflict', 'The event has no failed or exhausted deliveries to retry.');
  const ids = rows.map((r) => r.id);
  await enqueueDeliveries(app, ids, poolOf(app.pools, tenantId));
  return ids;
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
 * destination is ACTIVE go back to `replaying` with a fresh round of attempts; their
 * events become `replayed`. One statement, so a replay is all-or-nothing per call.
 */
export async function replayMatching(app: ReplayDeps, tenantId: string, f: ReplayFilter): Promise<{ id: string; eventId: string }[]> {
  const client = await app.pool.connect();
  let replayed: { id: string; eventId: string }[];
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string; event_id: string }>(
      `UPDATE deliveries d
          SET status = 'replaying', replay_count = d.replay_count + 1, next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, updated_at = now()
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
  const { rows } = await app.pool.query<{ status: string; retained: boolean; dst_state: string }>(
    `SELECT ${shownStatusSql('d')} AS status, EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id) AS retained, t.state AS dst_state
       FROM deliveries d JOIN destinations t ON t.id = d.destination_id WHERE d.id = $1 AND d.tenant_id = $2`,
    [id, tenantId],
  );
  const r = rows[0];
  if (!r) return AppError.notFound('delivery');
  if (!r.retained) return new AppError('conflict', 'The payload of this event is no longer retained, so the delivery cannot be replayed.', { reason_code: 'payload_not_retained' });
  if (r.dst_state !== 'ACTIVE') return new AppError('conflict', `The destination is ${r.dst_state}; enable it before replaying.`, { reason_code: 'destination_not_active' });
  return new AppError('conflict', `The delivery is ${r.status}; only exhausted or delivered deliveries can be replayed.`, { reason_code: 'not_replayable', current_status: r.status });
}

/** Replays one delivery; returns its event's id, or throws why it cannot be replayed. */
export async function replayOne(app: ReplayDeps, tenantId: string, deliveryId: string): Promise<string> {
  const [replayed] = await replayMatching(app, tenantId, { deliveryIds: [deliveryId], limit: 1 });
  if (!replayed) throw await explainRefusal(app, tenantId, deliveryId);
  return replayed.eventId;
}
