import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { changeState, type Transition } from '../../lifecycle/lifecycle';
import { replayOne, retryEventDeliveries } from '../../replay/replay.service';
import { apiContextOf, type McpContext } from '../mcp-deps';
import { defineTool, idOf, type AnyTool } from './tool-def';

// Retry and replay are the REST API's own (replay.service), so both surfaces refuse and
// accept the same deliveries for the same reasons.
async function retry(ctx: McpContext, eventId: string): Promise<Record<string, unknown>> {
  const retried = [...(await retryEventDeliveries(ctx.deps, ctx.principal.tenantId, eventId))].sort((a, b) => (a.id < b.id ? -1 : 1));
  return { event_id: eventId, delivery_ids: retried.map((r) => r.id), deliveries: retried.map((r) => ({ delivery_id: r.id, status: r.status })) };
}

async function replay(ctx: McpContext, deliveryId: string): Promise<Record<string, unknown>> {
  const { eventId } = await replayOne(ctx.deps, ctx.principal.tenantId, deliveryId);
  return { delivery_id: deliveryId, event_id: eventId, status: 'replaying' };
}

const SWITCH = {
  ACTIVE: { transition: 'enable', from: 'DISABLED' },
  DISABLED: { transition: 'disable', from: 'ACTIVE' },
} as const satisfies Record<string, { transition: Transition; from: string }>;

// The REST enable/disable (POST …/destinations/{id}/enable|disable) exactly: the api's
// lifecycle moves DISABLED → ACTIVE or ACTIVE → DISABLED and refuses anything else as the
// route does (404 for a missing or DELETED destination, 409 current_state for another state);
// an enable also clears disabled_reason, closes the circuit breaker (so an auto-disabled
// destination does not trip again on its first failure) and hands held deliveries over; both
// announce the change. Asking for the state it is in already changes nothing (the tool is
// idempotent) and answers that state as the previous one.
async function setDestinationState(ctx: McpContext, destinationId: string, state: keyof typeof SWITCH): Promise<Record<string, unknown>> {
  const { transition, from } = SWITCH[state];
  try {
    await changeState(apiContextOf(ctx.deps, 'set_destination_state'), 'destination', ctx.principal.tenantId, destinationId, transition);
  } catch (err) {
    if (err instanceof AppError && err.type === 'conflict' && err.extras['current_state'] === state) {
      return { destination_id: destinationId, state, previous_state: state };
    }
    throw err;
  }
  return { destination_id: destinationId, state, previous_state: from };
}

/** Write tools: listed, but each answers 403 write-tool-disabled until its group is enabled for the key. */
export const writeTools: AnyTool[] = [
  defineTool({
    name: 'retry_event',
    title: 'Retry an event',
    description: "Makes the event's failed deliveries (pending again) and exhausted ones (replaying: out of the DLQ) due now, so they are sent to their destinations again (a DISABLED destination's are held until it is enabled; those of a DELETED destination, a DISABLED or DELETED flow, or a purged payload are left alone, and 409 when none can be retried); calling it again after they failed again sends them again (tool group: retry; disabled by default).",
    access: { group: 'retry' },
    input: { event_id: idOf('evt') },
    output: z.object({
      event_id: z.string(),
      delivery_ids: z.array(z.string()),
      /** Each re-queued delivery's status: pending (it had failed) or replaying (it came out of the DLQ). */
      deliveries: z.array(z.object({ delivery_id: z.string(), status: z.enum(['pending', 'replaying']) })),
    }),
    run: (ctx, args) => retry(ctx, args.event_id),
    resourceOf: (args) => args.event_id,
    effects: { destructive: true, idempotent: false, openWorld: true },
  }),
  defineTool({
    name: 'replay_delivery',
    title: 'Replay a delivery',
    description: 'Re-queues an exhausted or delivered delivery whose payload is still retained and whose destination and flow are ACTIVE, so it is sent again; each call sends it once more (tool group: replay; disabled by default).',
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
    description:
      "Switches a destination between ACTIVE and DISABLED as the REST enable/disable routes do (same rules, same effects); DISABLED stops its deliveries until it is ACTIVE again. Enabling clears an automatic disable (disabled_reason) and closes the destination's circuit breaker, and its held deliveries that are due are sent at once. A missing or DELETED destination is not found; a DRAFT one is a conflict (current_state); asking for the state it is in changes nothing (tool group: configuration; disabled by default).",
    access: { group: 'configuration' },
    input: { destination_id: idOf('dst'), state: z.enum(['ACTIVE', 'DISABLED']) },
    output: z.object({ destination_id: z.string(), state: z.string(), previous_state: z.string() }),
    run: (ctx, args) => setDestinationState(ctx, args.destination_id, args.state),
    resourceOf: (args) => args.destination_id,
    // Switching to the state it is in changes nothing more.
    effects: { destructive: true, idempotent: true, openWorld: false },
  }),
];
