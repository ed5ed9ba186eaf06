import type { RequestContext } from '../context';
import { findPage, readPage, stringParam } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { created, ok } from '../lib/format';
import type { DeliveryFlow } from '../lib/models';
import { asModel } from '../lib/rows';
import { lifecycleRoutes } from '../lifecycle/lifecycle.routes';
import { STATE_FILTER_PARAMS, stateFilter } from '../lifecycle/state-filter';
import { createFlowBody, flowView, updateFlowBody, type FlowBody } from './flow.schema';
import { createFlow, findFlow, flowToView, updateFlow } from './flow.service';

const BASE = '/v1/tenants/:tid/delivery-flows';
const TAG = 'Delivery flows';

export async function listFlows(ctx: RequestContext, plural: string): Promise<Record<string, unknown>> {
  const page = readPage(ctx.query, 'flw');
  const source = stringParam(ctx.query, 'source_id');
  const destination = stringParam(ctx.query, 'destination_id');
  const where = { tenantId: ctx.tenantId, ...stateFilter(ctx.query), ...(source ? { ingesterId: source } : {}), ...(destination ? { destinationId: destination } : {}) };
  const result = await findPage(page, (a) => ctx.app.prisma.deliveryFlow.findMany({ ...a, where: { ...where, ...a.where } }));
  return listBody(plural, result, flowToView);
}

export async function createFlowReply(ctx: RequestContext) {
  return created(flowToView(await createFlow(ctx.app, ctx.tenantId, ctx.body as FlowBody)));
}

const common = { auth: 'credential', tenant: 'path' } as const;

export const flowRoutes: AuthedRoute[] = [
  {
    ...common,
    method: 'get',
    path: BASE,
    operationId: 'flows.list',
    scope: 'read:flows',
    doc: { summary: 'List delivery flows', tag: TAG, response: listOf('delivery_flows', flowView), query: ['limit', 'cursor', 'offset', ...STATE_FILTER_PARAMS, 'source_id', 'destination_id'] },
    handler: async (ctx) => ok(await listFlows(ctx, 'delivery_flows')),
  },
  {
    ...common,
    method: 'post',
    path: BASE,
    operationId: 'flows.create',
    scope: 'write:flows',
    body: createFlowBody,
    doc: {
      summary: 'Create a delivery flow (endpoint → target, optional filter)',
      description:
        'state defaults to ACTIVE; "state":"DRAFT" creates it unapplied (POST …/apply activates it together with DRAFT references). ' +
        'One ingester may have at most FLOWS_PER_INGESTER_MAX flows that are not DELETED (default 100: its fan-out); past it, 409 conflict with reason_code flow_limit_reached, limit and ingester_id (also on a replace that moves a flow to that ingester).',
      tag: TAG,
      response: flowView,
      errors: [409, 422],
    },
    handler: createFlowReply,
  },
  {
    ...common,
    method: 'get',
    path: `${BASE}/:id`,
    operationId: 'flows.get',
    scope: 'read:flows',
    doc: { summary: 'Get one delivery flow', tag: TAG, response: flowView, errors: [404] },
    handler: async (ctx) => ok(flowToView(await findFlow(ctx.app, ctx.tenantId, ctx.params['id']!))),
  },
  {
    ...common,
    method: 'put',
    path: `${BASE}/:id`,
    operationId: 'flows.update',
    scope: 'write:flows',
    body: updateFlowBody,
    doc: { summary: 'Replace a delivery flow', tag: TAG, response: flowView, errors: [404, 409, 422] },
    handler: async (ctx) => ok(flowToView(await updateFlow(ctx.app, ctx.tenantId, ctx.params['id']!, ctx.body as FlowBody))),
  },
  ...lifecycleRoutes({
    kind: 'flow',
    itemPath: `${BASE}/:id`,
    idParam: 'id',
    operationPrefix: 'flows',
    tag: TAG,
    scope: 'write:flows',
    view: flowView,
    toView: (_ctx, row) => flowToView(asModel<DeliveryFlow>(row)),
    publishAlias: true,
  }),
];
