import type { RequestContext } from '../context';
import type { AuthedRoute } from '../http/route';
import type { JsonSchema } from '../http/validate';
import { ok } from '../lib/format';
import { changeState, type LifecycleKind, type LifecycleRow, type Transition } from './lifecycle';

interface LifecycleGroup {
  kind: LifecycleKind;
  /** Path of one object, e.g. `/v1/tenants/:tid/ingesters/:iid`. */
  itemPath: string;
  idParam: string;
  operationPrefix: string;
  tag: string;
  scope: string;
  view: JsonSchema;
  /** The answer of a transition, from the row it wrote (raw pg: lib/rows.ts, asModel), never read again after the commit. */
  toView(ctx: RequestContext, row: LifecycleRow): unknown;
  /** Also answer `…/publish` as apply (the flow group's SPEC wording). */
  publishAlias?: boolean;
}

/** A delete's bound on the deliveries it closes itself (DELETE_CLOSE_INLINE_LIMIT, lifecycle.ts). */
const BEYOND_INLINE_LIMIT =
  'Beyond DELETE_CLOSE_INLINE_LIMIT of them (10,000 by default) the transaction closes that many, lowest ids first, and the deliverer moves the rest the same way: ' +
  'its janitor is woken by the delete (or runs within JANITOR_INTERVAL_MS, 60 s, anyway) and closes up to 20,000 per run, a run about every JANITOR_INTERVAL_MS; until then they stay open (shown as pending or failed) but are never sent. ';

/** What each transition does to deliveries, by kind (OpenAPI descriptions). */
const DELIVERY_EFFECTS: Partial<Record<LifecycleKind, Partial<Record<Transition, string>>>> = {
  destination: {
    disable:
      'Delivery stops: its pending, failed and replaying deliveries are held (not sent, no attempt used), and ACTIVE flows to it keep creating deliveries for new events, held the same way. ' +
      "A delivery held for longer than the deliverer's HELD_RETENTION_MS (7 days by default), counted from when it was held (the disable, or its routing or retry while the destination was DISABLED), is moved to the DLQ with last_error 'held_expired: …'; retried from there, it is held again while the destination is DISABLED, for another HELD_RETENTION_MS.",
    enable:
      'Delivery resumes: its held deliveries that are due are handed to the deliverer at once; the rest follow their schedule. ' +
      "Its circuit breaker and failure streak are reset before it becomes ACTIVE, so the first failure after the enable starts a new streak (the auto-disable after DESTINATION_DISABLE_AFTER_MS of failures counts from there). " +
      'When they cannot be reset (Redis unavailable): 503 service-unavailable with Retry-After, and nothing changes (the destination stays DISABLED, its deliveries held); retry after the wait.',
    delete:
      "DRAFT or DISABLED → DELETED; disable an ACTIVE destination first. In the same transaction its open deliveries (pending, failed, replaying, including one being sent right now) become exhausted with last_error 'destination_deleted: …', and their events' status is rolled up (dlq_queued; an event already delivered or acked keeps its status: a re-send of a delivered delivery that ends in the DLQ counts there without moving its event back). " +
      BEYOND_INLINE_LIMIT +
      'They sit in the DLQ and are purged after the DLQ retention like any exhausted delivery; replaying or retrying them answers 409 destination_not_active. ' +
      'An attempt that was in flight during the delete is still recorded in the attempt history, but does not change the delivery.',
  },
  flow: {
    disable: 'The route is switched off: new events are not routed through it (status_reason flow_not_active when no flow of the ingester is ACTIVE), and its open deliveries are held.',
    enable: 'Delivery resumes: its held deliveries that are due are handed to the deliverer at once.',
    delete:
      "DRAFT or DISABLED → DELETED; disable an ACTIVE flow first. In the same transaction its open deliveries (pending, failed, replaying, including one being sent right now) become exhausted with last_error 'flow_deleted: …', and their events' status is rolled up (dlq_queued; an event already delivered or acked keeps its status: a re-send of a delivered delivery that ends in the DLQ counts there without moving its event back). " +
      BEYOND_INLINE_LIMIT +
      'They sit in the DLQ and are purged after the DLQ retention like any exhausted delivery; replaying or retrying them answers 409 flow_not_active.',
  },
};

const ACTIONS: { t: Transition; verb: string; summary: string }[] = [
  { t: 'apply', verb: 'apply', summary: 'Apply a DRAFT (→ ACTIVE); delivery starts' },
  { t: 'disable', verb: 'disable', summary: 'Stop an ACTIVE object (→ DISABLED); delivery stops' },
  { t: 'enable', verb: 'enable', summary: 'Re-enable a DISABLED object (→ ACTIVE)' },
];

const describe = (kind: LifecycleKind, t: Transition): { description?: string } => {
  const d = DELIVERY_EFFECTS[kind]?.[t];
  return d ? { description: d } : {};
};

/** apply / disable / enable (POST …/{id}/<action>) and DELETE (→ DELETED) for one group. */
export function lifecycleRoutes(g: LifecycleGroup): AuthedRoute[] {
  const run = (t: Transition) => async (ctx: RequestContext) => {
    const id = ctx.params[g.idParam]!;
    const row = await changeState(ctx.app, g.kind, ctx.tenantId, id, t);
    return ok(t === 'delete' ? { id, state: 'DELETED' } : g.toView(ctx, row));
  };
  const common = { auth: 'credential', tenant: 'path', scope: g.scope } as const;
  return [
    ...[...ACTIONS, ...(g.publishAlias ? [{ t: 'apply' as const, verb: 'publish', summary: 'Publish (same as apply)' }] : [])].map(
      ({ t, verb, summary }): AuthedRoute => ({
        ...common,
        method: 'post',
        path: `${g.itemPath}/${verb}`,
        operationId: `${g.operationPrefix}.${verb}`,
        doc: { summary, ...describe(g.kind, t), tag: g.tag, status: 200, response: g.view, errors: [404, 409] },
        handler: run(t),
      }),
    ),
    {
      ...common,
      method: 'delete',
      path: g.itemPath,
      operationId: `${g.operationPrefix}.delete`,
      doc: {
        summary: 'Delete (DRAFT or DISABLED → DELETED; disable an ACTIVE object first)',
        ...describe(g.kind, 'delete'),
        tag: g.tag,
        status: 200,
        response: { type: 'object', required: ['id', 'state'], properties: { id: { type: 'string' }, state: { const: 'DELETED' } } },
        errors: [404, 409],
      },
      handler: run('delete'),
    },
  ];
}
