import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { withTransaction } from '@hookline/db';
import { publishConfigChange } from '@hookline/queues';
import { enqueueDeliveries, poolOf } from '../../replay/requeue';
import type { McpContext } from '../mcp-deps';
import { defineTool, idOf, type AnyTool } from './tool-def';

/** Hands due deliveries to the deliverer, on the tenant's pool queue (a failed enqueue is left to recovery). */
function enqueue(ctx: McpContext, deliveryIds: string[]): Promise<void> {
  return enqueueDeliveries(ctx.deps, deliveryIds, poolOf(ctx.deps.pools, ctx.principal.tenantId));
}

async function retryEvent(ctx: McpContext, eventId: string): Promise<Record<string, unknown>> {
  const { tenantId } = ctx.principal;
  const { rows: evt } = await ctx.deps.pool.query('SELECT 1 FROM events WHERE id = $1 AND tenant_id = $2', [eventId, tenantId]);
  if (!evt.length) throw AppError.notFound('event');
  const { rows } = await ctx.deps.pool.query<{ id: string }>(
    `UPDATE deliveries SET status = 'pending', next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, updated_at = now()
      WHERE tenant_id = $1 AND event_id = $2 AND status IN ('failed', 'exhausted') RETURNING id`,
    [tenantId, eventId],
  );
  if (!rows.length) throw new AppError('conflict', 'The event has no failed or exhausted deliveries to retry.');
  const ids = rows.map((r) => r.id).sort();
  await enqueue(ctx, ids);
  return { event_id: eventId, delivery_ids: ids, status: 'pending' };
}

async function replayDelivery(ctx: McpContext, deliveryId: string): Promise<Record<string, unknown>> {
  const { tenantId } = ctx.principal;
  const outcome = await withTransaction(ctx.deps.pool, async (client) => {
    const { rows } = await client.query<{ status: string; event_id: string; retained: boolean }>(
      `SELECT d.status::text AS status, d.event_id, EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = d.event_id) AS retained
         FROM deliveries d WHERE d.id = $1 AND d.tenant_id = $2 FOR UPDATE`,
      [deliveryId, tenantId],
    );
    const d = rows[0];
    if (!d) throw AppError.notFound('delivery');
    if (!d.retained) throw new AppError('conflict', 'The payload of this event is no longer retained, so the delivery cannot be replayed.', { reason_code: 'payload_not_retained' });
    if (d.status !== 'exhausted' && d.status !== 'delivered') throw new AppError('conflict', `The delivery is ${d.status}; only exhausted or delivered deliveries can be replayed.`, { reason_code: 'not_replayable' });
    await client.query(
      `UPDATE deliveries SET status = 'replaying', replay_count = replay_count + 1, next_attempt_at = now(), lease_until = NULL, lease_owner = NULL, updated_at = now() WHERE id = $1`,
      [deliveryId],
    );
    await client.query(`UPDATE events SET status = 'replayed', updated_at = now() WHERE id = $1`, [d.event_id]);
    return { delivery_id: deliveryId, event_id: d.event_id, status: 'replaying' };
  });
  await enqueue(ctx, [deliveryId]);
  return outcome;
}

async function setDestinationState(ctx: McpContext, destinationId: string, state: 'ACTIVE' | 'DISABLED'): Promise<Record<string, unknown>> {
  const { tenantId } = ctx.principal;
  const { rows } = await ctx.deps.pool.query<{ state: string; previous: string }>(
    `UPDATE destinations t SET state = $3::"LifecycleState", disabled_reason = NULL, updated_at = now()
       FROM (SELECT id, state AS previous FROM destinations WHERE id = $1 AND tenant_id = $2) p
      WHERE t.id = p.id AND p.previous IN ('ACTIVE', 'DISABLED') RETURNING t.state::text AS state, p.previous::text AS previous`,
    [destinationId, tenantId, state],
  );
  const row = rows[0];
  if (!row) {
    const { rows: found } = await ctx.deps.pool.query<{ state: string }>('SELECT state::text AS state FROM destinations WHERE id = $1 AND tenant_id = $2', [destinationId, tenantId]);
    if (!found[0]) throw AppError.notFound('destination');
    throw new AppError('conflict', `The destination is ${found[0].state}; only ACTIVE and DISABLED destinations can be switched.`);
  }
  await publishConfigChange(ctx.deps.redis, ctx.deps.queuePrefix, { kind: 'destination', id: destinationId, tenantId });
  return { destination_id: destinationId, state: row.state, previous_state: row.previous };
}

/** Write tools: listed, but each answers 403 write-tool-disabled until its group is enabled for the key. */
export const writeTools: AnyTool[] = [
  defineTool({
    name: 'retry_event',
    title: 'Retry an event',
    description: "Makes the event's failed and exhausted deliveries due now (tool group: retry; disabled by default).",
    access: { group: 'retry' },
    input: { event_id: idOf('evt') },
    output: z.object({ event_id: z.string(), delivery_ids: z.array(z.string()), status: z.literal('pending') }),
    run: (ctx, args) => retryEvent(ctx, args.event_id),
    resourceOf: (args) => args.event_id,
  }),
  defineTool({
    name: 'replay_delivery',
    title: 'Replay a delivery',
    description: 'Re-queues an exhausted or delivered delivery whose payload is still retained (tool group: replay; disabled by default).',
    access: { group: 'replay' },
    input: { delivery_id: idOf('dlv') },
    output: z.object({ delivery_id: z.string(), event_id: z.string(), status: z.literal('replaying') }),
    run: (ctx, args) => replayDelivery(ctx, args.delivery_id),
    resourceOf: (args) => args.delivery_id,
  }),
  defineTool({
    name: 'set_destination_state',
    title: 'Enable or disable a destination',
    description: 'Switches a destination between ACTIVE and DISABLED (tool group: configuration; disabled by default).',
    access: { group: 'configuration' },
    input: { destination_id: idOf('dst'), state: z.enum(['ACTIVE', 'DISABLED']) },
    output: z.object({ destination_id: z.string(), state: z.string(), previous_state: z.string() }),
    run: (ctx, args) => setDestinationState(ctx, args.destination_id, args.state),
    resourceOf: (args) => args.destination_id,
  }),
];
