import { AppError } from '@hookline/errors';
import type { RequestContext } from '../context';
import { listDeliveries } from '../deliveries/delivery.queries';
import { deliveryToView, deliveryView } from '../deliveries/delivery.view';
import { readTimeRange } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { ok } from '../lib/format';
import { replayDepsOf, replayMatching, replayOne, retryEvent } from './replay.service';

const TAG = 'Retry and replay';
const write = { auth: 'credential', scope: 'write:deliveries' } as const;

const retryView = {
  type: 'object',
  required: ['event_id', 'retried', 'delivery_ids'],
  properties: { event_id: { type: 'string' }, retried: { type: 'integer' }, delivery_ids: { type: 'array', items: { type: 'string' } } },
};
const bulkView = { type: 'object', required: ['replayed', 'delivery_ids'], properties: { replayed: { type: 'integer' }, delivery_ids: { type: 'array', items: { type: 'string' } } } };

const RETRY_DESCRIPTION =
  'Each failed or exhausted delivery of the event that can still be delivered is re-queued, due now: a failed one becomes pending, an exhausted one (in the DLQ) replaying (one more attempt; one being sent right now is left to its attempt). ' +
  'Its destination must be ACTIVE, or DISABLED: the delivery is then held, pending, and sent once the destination is enabled again (or moved to the DLQ if it is deleted, or if it stays DISABLED for the HELD_RETENTION_MS of the deliverer, 7 days by default, counted from this retry). ' +
  "Deliveries whose destination is DELETED, or whose delivery flow is not ACTIVE (DISABLED or DELETED), are not retried: they stay as they are (a destination's or flow's delete moves its open deliveries to the DLQ, where they are purged after the DLQ retention). " +
  'When the event has failed or exhausted deliveries but none can be retried: 409 with reason_code destination_not_active or flow_not_active (as replay answers; each only when that destination or flow really is not in a state that delivers), or payload_not_retained when the payload is gone. ' +
  'A failed delivery being sent when the retry runs is left to its attempt; if that attempt ends during the call, so that the delivery is retryable by the time the answer is decided, the retry runs once more and takes it; should it be in flight again by then, 409 with reason_code delivery_in_flight (fetch the event, and retry again if a delivery is still failed). ' +
  'An event with no failed or exhausted delivery (free to retry): 409 without a reason_code. ' +
  'A dlq_queued event whose exhausted deliveries are retried becomes replayed (then delivered once they are), as with a replay.';

/** What a replay does to the event, and the 409 of a concurrent one: in the replay operations' descriptions. */
const REPLAY_EVENT_EFFECT =
  'The event of a replayed exhausted delivery (one taken out of the DLQ) becomes replayed when it was dlq_queued (then delivered once its deliveries are); any other event keeps its status. ' +
  'Re-sending a delivered delivery never changes its event: a delivered event stays delivered, whatever the re-send gives (SPEC.md allows delivered only to become acked; a failing re-send ends in the DLQ on its own), and a dlq_queued event (another of its deliveries in the DLQ) stays dlq_queued until that one is replayed, retried or purged. ' +
  'One delivery held by a concurrent replay or retry of it: 409 with reason_code replay_in_progress (fetch the delivery to see its outcome); one in another state than exhausted or delivered: 409 not_replayable with current_status.';

const retryBody = { type: 'object', required: ['event_id'], properties: { event_id: { type: 'string', minLength: 1 } }, additionalProperties: false };
const replayBody = {
  type: 'object',
  description: 'One delivery (delivery_id), a list (delivery_ids), or a DLQ filter (destination_id, since, until, status; default status exhausted)',
  properties: {
    delivery_id: { type: 'string', minLength: 1 },
    delivery_ids: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 1000 },
    destination_id: { type: 'string', minLength: 1 },
    status: { type: 'string', enum: ['exhausted', 'delivered'] },
    since: { type: 'string', format: 'date-time' },
    until: { type: 'string', format: 'date-time', description: 'Exclusive; before since is a 400 validation-error on until' },
    limit: { type: 'integer', minimum: 1, maximum: 10000, description: 'Most deliveries one call replays (default 1000). Matching deliveries busy elsewhere at that moment (being sent, recorded or closed) are skipped and the next matching ones taken instead, so fewer are replayed only when fewer can be.' },
  },
  additionalProperties: false,
};

async function retryReply(ctx: RequestContext, eventId: string) {
  const ids = await retryEvent(replayDepsOf(ctx.app), ctx.tenantId, eventId);
  return { status: 202, body: { event_id: eventId, retried: ids.length, delivery_ids: ids } };
}

async function replayOneReply(ctx: RequestContext, deliveryId: string) {
  // The delivery as the replay wrote it: nothing read after the commit can fail the answer.
  return { status: 202, body: deliveryToView(await replayOne(replayDepsOf(ctx.app), ctx.tenantId, deliveryId)) };
}

interface ReplayBody {
  delivery_id?: string;
  delivery_ids?: string[];
  destination_id?: string;
  status?: 'exhausted' | 'delivered';
  since?: string;
  until?: string;
  limit?: number;
}

/** The fields that only a list or a filter takes: with delivery_id, each is refused (400), before anything is replayed. */
const NOT_WITH_ONE = ['delivery_ids', 'destination_id', 'status', 'since', 'until', 'limit'] as const;

async function bulkReplayReply(ctx: RequestContext) {
  const b = (ctx.body ?? {}) as ReplayBody;
  if (b.delivery_id !== undefined) {
    const extra = NOT_WITH_ONE.filter((f) => b[f] !== undefined);
    if (extra.length) throw AppError.validation(extra.map((field) => ({ field, message: 'cannot be combined with delivery_id' })));
    return replayOneReply(ctx, b.delivery_id);
  }
  const range = readTimeRange({ since: b.since, until: b.until });
  const replayed = await replayMatching(replayDepsOf(ctx.app), ctx.tenantId, {
    deliveryIds: b.delivery_ids,
    destinationId: b.destination_id,
    status: b.status,
    since: range?.gte,
    until: range?.lt,
    limit: b.limit ?? 1000,
  });
  return { status: 202, body: { replayed: replayed.length, delivery_ids: replayed.map((r) => r.id) } };
}

export const replayRoutes: AuthedRoute[] = [
  {
    ...write,
    tenant: 'path',
    method: 'post',
    path: '/v1/tenants/:tid/events/:eid/retry',
    operationId: 'events.retry',
    doc: { summary: "Retry the event's failed and exhausted deliveries now", description: RETRY_DESCRIPTION, tag: TAG, status: 202, response: retryView, errors: [404, 409] },
    handler: (ctx) => retryReply(ctx, ctx.params['eid']!),
  },
  {
    ...write,
    tenant: 'path',
    method: 'post',
    path: '/v1/tenants/:tid/deliveries/:did/replay',
    operationId: 'deliveries.replay',
    doc: {
      summary: 'Replay a delivery (gated on the retained payload)',
      description:
        'Exhausted or delivered deliveries only; 409 with reason_code payload_not_retained when the payload is gone, destination_not_active when the destination is not ACTIVE, flow_not_active when the delivery flow is not ACTIVE. ' +
        'A delivery closed because its destination or flow was deleted stays in the DLQ (destination_not_active / flow_not_active) until it is purged. ' +
        REPLAY_EVENT_EFFECT,
      tag: TAG,
      status: 202,
      response: deliveryView,
      errors: [404, 409],
    },
    handler: (ctx) => replayOneReply(ctx, ctx.params['did']!),
  },
  {
    ...write,
    tenant: 'flat',
    method: 'post',
    path: '/v1/retry',
    operationId: 'flat.retry',
    body: retryBody,
    doc: { summary: "Retry an event's failed and exhausted deliveries", description: RETRY_DESCRIPTION, tag: TAG, status: 202, response: retryView, errors: [404, 409] },
    handler: (ctx) => retryReply(ctx, (ctx.body as { event_id: string }).event_id),
  },
  {
    ...write,
    tenant: 'flat',
    method: 'post',
    path: '/v1/replay',
    operationId: 'flat.replay',
    body: replayBody,
    doc: {
      summary: 'Replay one delivery, a list, or the DLQ by filter (gated on the retained payload)',
      description: 'With delivery_id the answer is the delivery (or a 409 naming why it cannot be replayed; delivery_id combined with any other field is a 400 naming those fields, and nothing is replayed); otherwise {replayed, delivery_ids}: deliveries without a retained payload or with an inactive destination or delivery flow are skipped, and so are ones busy elsewhere at that moment (being sent, recorded or closed). Up to limit deliveries are replayed, oldest id first: skipped ones are made up for by the next matching deliveries, so fewer than limit means no more could be replayed. ' +
        REPLAY_EVENT_EFFECT,
      tag: TAG,
      status: 202,
      response: { anyOf: [deliveryView, bulkView] },
      errors: [404, 409],
    },
    handler: bulkReplayReply,
  },
  {
    auth: 'credential',
    tenant: 'flat',
    scope: 'read:deliveries',
    method: 'get',
    path: '/v1/dlq',
    operationId: 'flat.dlq',
    doc: {
      summary: 'The dead-letter queue: exhausted deliveries, newest first',
      description:
        "Deliveries, not events: an event's status is dlq_queued while one of its deliveries is here, except for an event already delivered (or acked) whose re-sent delivery ended here again: that event keeps its status, so GET …/events?status=dlq_queued does not list it while this list does. " +
        'Entries are purged DLQ_RETENTION_MS (7 days by default) after they were exhausted, with their attempts, and with the retained payload when no other delivery of the event still needs it (the event then has status_reason payload_purged). ' +
        "The purge then recomputes the event's status from the deliveries that remain, as delivery outcomes do: still dlq_queued while another of its deliveries is here; else failed when one is failed (being retried), delivered when all remaining ones are delivered; " +
        'else (the remaining ones are still pending, held or replaying, or none remains) failed: it was not delivered everywhere and nothing of it is in the DLQ any more (from there it follows its remaining deliveries: delivered once they all are, dlq_queued if one is exhausted again; with none left it stays failed). ' +
        'A delivered, acked or replayed event is not moved back by a purge.',
      tag: TAG, response: listOf('deliveries', deliveryView), query: ['limit', 'cursor', 'offset', 'event_id', 'destination_id', 'source_id', 'since', 'until'] },
    handler: async (ctx) => ok(listBody('deliveries', await listDeliveries(ctx.app, ctx.tenantId, ctx.query, 'exhausted'), deliveryToView)),
  },
];
