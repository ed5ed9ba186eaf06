import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { publishConfigChange } from '@hookline/queues';
import { replayOne, retryEvent } from '../../replay/replay.service';
import type { McpContext } from '../mcp-deps';
import { defineTool, idOf, type AnyTool } from './tool-def';

// Retry and replay are the REST API's own (replay.service), so both surfaces refuse and
// accept the same deliveries for the same reasons.
async function retry(ctx: McpContext, eventId: string): Promise<Record<string, unknown>> {
  const ids = await retryEvent(ctx.deps, ctx.principal.tenantId, eventId);
  return { event_id: eventId, delivery_ids: [...ids].sort(), status: 'pending' };
}

async function replay(ctx: McpContext, deliveryId: string): Promise<Record<string, unknown>> {
  const eventId = await replayOne(ctx.deps, ctx.principal.tenantId, deliveryId);
  return { delivery_id: deliveryId, event_id: eventId, status: 'replaying' };
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
    description: "Makes the event's failed and exhausted deliveries due now, so they are sent to their destinations again; calling it again after they failed again sends them again (tool group: retry; disabled by default).",
    access: { group: 'retry' },
    input: { event_id: idOf('evt') },
    output: z.object({ event_id: z.string(), delivery_ids: z.array(z.string()), status: z.literal('pending') }),
    run: (ctx, args) => retry(ctx, args.event_id),
    resourceOf: (args) => args.event_id,
    effects: { destructive: true, idempotent: false, openWorld: true },
  }),
  defineTool({
    name: 'replay_delivery',
    title: 'Replay a delivery',
    description: 'Re-queues an exhausted or delivered delivery whose payload is still retained and whose destination is ACTIVE, so it is sent again; each call sends it once more (tool group: replay; disabled by default).',
    access: { group: 'replay' },
    input: { delivery_id: idOf('dlv') },
    output: z.object({ delivery_id: z.string(), event_id: z.string(), status: z.literal('replaying') }),
    run: (ctx, args) => replay(ctx, args.delivery_id),
    resourceOf: (args) => args.delivery_id,
    effects: { destructive: true, idempotent: false, openWorld: true },
  }),
  defineTool({
    name: 'set_destination_state',
    title: 'Enable or disable a destination',
    description: 'Switches a destination between ACTIVE and DISABLED; DISABLED stops its deliveries until it is ACTIVE again (tool group: configuration; disabled by default).',
    access: { group: 'configuration' },
    input: { destination_id: idOf('dst'), state: z.enum(['ACTIVE', 'DISABLED']) },
    output: z.object({ destination_id: z.string(), state: z.string(), previous_state: z.string() }),
    run: (ctx, args) => setDestinationState(ctx, args.destination_id, args.state),
    resourceOf: (args) => args.destination_id,
    // Switching to the state it is in changes nothing more.
    effects: { destructive: true, idempotent: true, openWorld: false },
  }),
];
