import { AppError } from '@hookline/errors';
import { retryingDeadlocks, withTransaction, type Pool } from '@hookline/db';
import { resetDestinationHealthState } from '@hookline/queues';
import type { AppContext } from '../context';
import { announce } from '../lib/config-writes';
import { closeOpenDeliveries, requeueHeld } from './open-deliveries';

export type LifecycleState = 'DRAFT' | 'ACTIVE' | 'DISABLED' | 'DELETED';
export type Transition = 'apply' | 'disable' | 'enable' | 'delete';

/**
 * The configuration state machine (SPEC.md): DRAFT --apply--> ACTIVE --disable-->
 * DISABLED --enable--> ACTIVE; DRAFT or DISABLED --delete--> DELETED (an ACTIVE object
 * is disabled first, so deleting never stops traffic by surprise). Only ACTIVE delivers;
 * a DISABLED destination's deliveries are held (and an ACTIVE flow to it still creates
 * them) until it is enabled (sent), deleted (DLQ) or held longer than the deliverer's
 * HELD_RETENTION_MS (DLQ): see open-deliveries.ts. Their
 * `deliveries.held` flag is kept by a trigger on destinations.state, whoever changes it.
 */
export const TRANSITIONS: Record<Transition, { from: readonly LifecycleState[]; to: LifecycleState }> = {
  apply: { from: ['DRAFT'], to: 'ACTIVE' },
  disable: { from: ['ACTIVE'], to: 'DISABLED' },
  enable: { from: ['DISABLED'], to: 'ACTIVE' },
  delete: { from: ['DRAFT', 'DISABLED'], to: 'DELETED' },
};

export type LifecycleKind = 'ingester' | 'destination' | 'flow';
const TABLE: Record<LifecycleKind, string> = { ingester: 'ingesters', destination: 'destinations', flow: 'delivery_flows' };

type Queryable = Pick<Pool, 'query'>;

/** The row a transition wrote (raw pg: snake_case columns; lib/rows.ts, asModel, makes it the model). */
export type LifecycleRow = Record<string, unknown>;

/** One conditional UPDATE: moves the object only if it is in an allowed state; returns the row as written. */
export async function transition(db: Queryable, kind: LifecycleKind, tenantId: string, id: string, t: Transition): Promise<LifecycleRow> {
  const { from, to } = TRANSITIONS[t];
  const table = TABLE[kind];
  // A destination that becomes ACTIVE again loses its auto-disable reason in the same statement.
  const extra = kind === 'destination' && to === 'ACTIVE' ? ', disabled_reason = NULL' : '';
  const moved = await db.query<LifecycleRow>(
    `UPDATE ${table} SET state = $1::"LifecycleState", updated_at = now()${extra} WHERE id = $2 AND tenant_id = $3 AND state = ANY($4::"LifecycleState"[]) RETURNING *`,
    [to, id, tenantId, from],
  );
  if (moved.rows[0]) return moved.rows[0];
  const { rows } = await db.query<{ state: LifecycleState }>(`SELECT state FROM ${table} WHERE id = $1 AND tenant_id = $2`, [id, tenantId]);
  throw refusal(kind, t, rows[0]?.state);
}

/** Why `t` cannot move an object in `state` (missing or DELETED: 404; otherwise 409 with its `current_state`). */
export function refusal(kind: LifecycleKind | 'cluster', t: Transition, state: LifecycleState | undefined): AppError {
  if (!state || state === 'DELETED') return AppError.notFound(kind);
  const { from } = TRANSITIONS[t];
  return new AppError('conflict', `Cannot ${t} a ${kind} in state ${state} (allowed from ${from.join(' or ')}).`, { current_state: state });
}

/**
 * Applying a DRAFT flow is atomic with its references: the flow and any DRAFT ingester or
 * destination it uses become ACTIVE in one transaction. The flow's own state is judged
 * first (missing or DELETED: 404; not DRAFT: 409 with its `current_state`); then a
 * DISABLED or DELETED reference aborts it all (409 naming it in `reference`,
 * `reference_kind` and `reference_state`; `current_state` stays the flow's).
 */
async function applyFlow(app: AppContext, tenantId: string, id: string): Promise<{ flow: LifecycleRow; touched: string[] }> {
  const client = await app.pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ f_state: LifecycleState; ingester_id: string; destination_id: string; i_state: LifecycleState; d_state: LifecycleState }>(
      `SELECT f.state AS f_state, f.ingester_id, f.destination_id, i.state AS i_state, d.state AS d_state
         FROM delivery_flows f JOIN ingesters i ON i.id = f.ingester_id JOIN destinations d ON d.id = f.destination_id
        WHERE f.id = $1 AND f.tenant_id = $2 FOR UPDATE OF f, i, d`,
      [id, tenantId],
    );
    const refs = rows[0];
    if (!refs || !TRANSITIONS.apply.from.includes(refs.f_state)) throw refusal('flow', 'apply', refs?.f_state);
    const references = [['ingester', refs.ingester_id, refs.i_state], ['destination', refs.destination_id, refs.d_state]] as const;
    for (const [kind, refId, state] of references) {
      if (state === 'DISABLED' || state === 'DELETED') {
        throw new AppError('conflict', `The flow's ${kind} ${refId} is ${state}; ${state === 'DISABLED' ? 'enable it' : 'point the flow at another one'} before applying the flow.`, {
          current_state: refs.f_state,
          reference: refId,
          reference_kind: kind,
          reference_state: state,
        });
      }
    }
    const flow = await transition(client, 'flow', tenantId, id, 'apply');
    const touched = [id];
    for (const [kind, refId, state] of references) {
      if (state === 'DRAFT') touched.push((await transition(client, kind, tenantId, refId, 'apply'), refId));
    }
    await client.query('COMMIT');
    return { flow, touched };
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Moves the object (see TRANSITIONS) and returns its row as the transition wrote it: the
 * answer is built from it, never from a read after the commit. What follows the commit (the
 * announcement, handing held deliveries over) logs its failures and never throws.
 */
export async function changeState(app: AppContext, kind: LifecycleKind, tenantId: string, id: string, t: Transition): Promise<LifecycleRow> {
  if (kind === 'flow' && t === 'apply') {
    const { flow, touched } = await applyFlow(app, tenantId, id);
    for (const tid of touched) {
      const k: LifecycleKind = tid.startsWith('ing_') ? 'ingester' : tid.startsWith('dst_') ? 'destination' : 'flow';
      await announce(app, { kind: k, id: tid, tenantId });
    }
    return flow;
  }
  if (t === 'delete' && kind !== 'ingester') {
    const limit = app.config.DELETE_CLOSE_INLINE_LIMIT;
    const { row, closed } = await deleteWithDeliveries(app, kind, tenantId, id, limit);
    // At the limit, more may be open: the deliverer's janitor closes them (see open-deliveries.ts).
    const openDeliveriesLeft = closed >= limit;
    if (closed > 0) app.logger.info('closed the open deliveries of a deleted object (now in the DLQ)', { [`${kind}_id`]: id, tenant_id: tenantId, deliveries: closed, rest_to_janitor: openDeliveriesLeft });
    // The announcement also wakes the deliverers' janitor when some were left to it.
    await announce(app, openDeliveriesLeft ? { kind, id, tenantId, openDeliveriesLeft } : { kind, id, tenantId });
    return row;
  }
  let row: LifecycleRow;
  if (kind === 'destination' && t === 'enable') {
    row = await retryingDeadlocks(() => enableDestination(app, tenantId, id));
  } else if (kind === 'destination' && t === 'disable') {
    // Its deliveries' `held` flag follows its state in the same statement: the trigger
    // on destinations.state (migration 20261124000000_held_deliveries) marks the open
    // deliveries held when it is disabled and clears them when it is enabled, locking
    // them in id order. Those locks can meet an outcome batch's, so a deadlock victim is
    // run again (the trigger's work was rolled back with it).
    row = await retryingDeadlocks(() => transition(app.pool, kind, tenantId, id, t));
  } else {
    row = await transition(app.pool, kind, tenantId, id, t);
  }
  await announce(app, { kind, id, tenantId });
  // Delivery resumes: the held deliveries go out now (after the announcement, so that
  // routers have stopped holding new ones), not at the next recovery sweep.
  if (t === 'enable' && kind !== 'ingester') await requeueHeld(app, kind, tenantId, id);
  return row;
}

/** Seconds a client is asked to wait when a re-enabled destination's health could not be reset. */
const HEALTH_RESET_RETRY_AFTER_S = 2;

/**
 * Re-enables a DISABLED destination with a fresh health record. Its circuit and failure
 * streak (`failing_since`, in Redis: packages/queues destination-state.ts) are forgotten
 * before the destination becomes ACTIVE, under its row lock and in the enable's
 * transaction: a failure recorded from then on starts a new streak, so the deliverer's
 * auto-disable (actOnHealth: failing since DESTINATION_DISABLE_AFTER_MS) cannot disable it
 * again on the streak that disabled it. When Redis cannot forget it (unreachable, or no
 * answer within REDIS_COMMAND_TIMEOUT_MS) the enable is refused whole: 503
 * service-unavailable with Retry-After, the destination still DISABLED and its
 * deliveries held. A refused transition (not DISABLED: 409; missing: 404) resets nothing.
 * The trigger's locks (held flags cleared, in id order) can meet an outcome batch's: run
 * it in retryingDeadlocks.
 */
async function enableDestination(app: AppContext, tenantId: string, id: string): Promise<LifecycleRow> {
  return withTransaction(app.pool, async (client) => {
    const { rows } = await client.query<{ state: LifecycleState }>('SELECT state FROM destinations WHERE id = $1 AND tenant_id = $2 FOR UPDATE', [id, tenantId]);
    const state = rows[0]?.state;
    if (!state || !TRANSITIONS.enable.from.includes(state)) throw refusal('destination', 'enable', state);
    try {
      await resetDestinationHealthState(app.redis, app.config.QUEUE_PREFIX, id);
    } catch (err) {
      app.logger.warn('could not reset the health of a destination being enabled; enable refused', { destination_id: id, tenant_id: tenantId, err: (err as Error).message });
      throw new AppError(
        'service-unavailable',
        "The destination's circuit breaker could not be reset (Redis unavailable), so it was not enabled. Retry after the time in Retry-After.",
        {},
        { 'Retry-After': String(HEALTH_RESET_RETRY_AFTER_S) },
      );
    }
    return transition(client, 'destination', tenantId, id, 'enable');
  });
}

/**
 * Deletes a destination or flow and, in the same transaction, moves up to `limit` of its
 * open deliveries (DELETE_CLOSE_INLINE_LIMIT, lowest ids first) to the DLQ (`exhausted`,
 * last_error naming the delete) with their events' status rolled up; any beyond are moved
 * by the deliverer's janitor with the same close (open-deliveries.ts): nothing is left
 * pending for ever. Returns how many deliveries were closed here. A deadlock victim (an
 * outcome being recorded for the same deliveries) is run again.
 */
async function deleteWithDeliveries(app: AppContext, kind: 'destination' | 'flow', tenantId: string, id: string, limit: number): Promise<{ row: LifecycleRow; closed: number }> {
  return retryingDeadlocks(() => withTransaction(app.pool, async (client) => {
    const row = await transition(client, kind, tenantId, id, 'delete');
    return { row, closed: await closeOpenDeliveries(client, kind, tenantId, id, limit) };
  }));
}
