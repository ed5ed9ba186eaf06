import type { AuthedRoute, QueryParam } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { ok } from '../lib/format';
import { findDelivery, listAttempts, listDeliveries } from './delivery.queries';
import { attemptToView, attemptView, deliveryToView, deliveryView } from './delivery.view';

const TAG = 'Deliveries';
const FILTERS: readonly QueryParam[] = ['limit', 'cursor', 'offset', 'status', 'event_id', 'destination_id', 'source_id', 'since', 'until'];
const deliveryList = listOf('deliveries', deliveryView);
const attemptList = listOf('attempts', attemptView);
const read = { auth: 'credential', scope: 'read:deliveries' } as const;

/** Tenant-scoped (`/v1/tenants/{tid}/…`) and flat (`X-Tenant-ID` or the key's tenant) delivery reads. */
export const deliveryRoutes: AuthedRoute[] = [
  {
    ...read,
    tenant: 'path',
    method: 'get',
    path: '/v1/tenants/:tid/deliveries',
    operationId: 'deliveries.list',
    doc: { summary: 'List deliveries (filters, cursor pagination, newest first)', tag: TAG, response: deliveryList, query: FILTERS },
    handler: async (ctx) => ok(listBody('deliveries', await listDeliveries(ctx.app, ctx.tenantId, ctx.query), deliveryToView)),
  },
  {
    ...read,
    tenant: 'path',
    method: 'get',
    path: '/v1/tenants/:tid/deliveries/:did',
    operationId: 'deliveries.get',
    doc: { summary: 'Get one delivery', tag: TAG, response: deliveryView, errors: [404] },
    handler: async (ctx) => ok(deliveryToView(await findDelivery(ctx.app, ctx.tenantId, ctx.params['did']!))),
  },
  {
    ...read,
    tenant: 'path',
    method: 'get',
    path: '/v1/tenants/:tid/deliveries/:did/attempts',
    operationId: 'deliveries.attempts',
    doc: { summary: 'Attempt history of a delivery (newest first)', tag: TAG, response: attemptList, query: ['limit', 'cursor', 'offset'], errors: [404] },
    handler: async (ctx) => ok(listBody('attempts', await listAttempts(ctx.app, ctx.tenantId, ctx.params['did']!, ctx.query), attemptToView)),
  },
  {
    ...read,
    tenant: 'flat',
    method: 'get',
    path: '/v1/deliveries',
    operationId: 'deliveries.flatList',
    doc: { summary: 'List deliveries; ?status=exhausted is the DLQ view', tag: TAG, response: deliveryList, query: FILTERS },
    handler: async (ctx) => ok(listBody('deliveries', await listDeliveries(ctx.app, ctx.tenantId, ctx.query), deliveryToView)),
  },
  {
    ...read,
    tenant: 'flat',
    method: 'get',
    path: '/v1/deliveries/:id',
    operationId: 'deliveries.flatGet',
    doc: { summary: 'Delivery status', tag: TAG, response: deliveryView, errors: [404] },
    handler: async (ctx) => ok(deliveryToView(await findDelivery(ctx.app, ctx.tenantId, ctx.params['id']!))),
  },
  {
    ...read,
    tenant: 'flat',
    method: 'get',
    path: '/v1/deliveries/:id/attempts',
    operationId: 'deliveries.flatAttempts',
    doc: { summary: 'Attempt history (HTTP status, truncated response body, timestamp, duration)', tag: TAG, response: attemptList, query: ['limit', 'cursor', 'offset'], errors: [404] },
    handler: async (ctx) => ok(listBody('attempts', await listAttempts(ctx.app, ctx.tenantId, ctx.params['id']!, ctx.query), attemptToView)),
  },
];
