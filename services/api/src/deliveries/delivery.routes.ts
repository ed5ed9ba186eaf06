import type { AuthedRoute, QueryParam } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { ok } from '../lib/format';
import { findDelivery, listAttempts, listDeliveries } from './delivery.queries';
import { attemptToView, attemptView, deliveryToView, deliveryView } from './delivery.view';

const TAG = 'Deliveries';
const FILTERS: readonly QueryParam[] = ['limit', 'cursor', 'offset', 'status', 'event_id', 'destination_id', 'source_id', 'since', 'until'];
const deliveryList = listOf('deliveries', deliveryView);
const attemptList = listOf('attempts', attemptView);

/**
 * The same three reads in both families: tenant-scoped (`/v1/tenants/{tid}/deliveries`,
 * the authoritative one) and flat (`/v1/deliveries`, tenant from `X-Tenant-ID` or the key).
 */
function deliveryReads(tenant: 'path' | 'flat'): AuthedRoute[] {
  const base = tenant === 'path' ? '/v1/tenants/:tid/deliveries' : '/v1/deliveries';
  const id = tenant === 'path' ? 'did' : 'id';
  const op = tenant === 'path' ? 'deliveries' : 'flat.deliveries';
  const common = { auth: 'credential', scope: 'read:deliveries', tenant, method: 'get' } as const;
  return [
    {
      ...common,
      path: base,
      operationId: `${op}.list`,
      doc: { summary: 'List deliveries (filters, cursor pagination, newest first); ?status=exhausted is the DLQ view', tag: TAG, response: deliveryList, query: FILTERS },
      handler: async (ctx) => ok(listBody('deliveries', await listDeliveries(ctx.app, ctx.tenantId, ctx.query), deliveryToView)),
    },
    {
      ...common,
      path: `${base}/:${id}`,
      operationId: `${op}.get`,
      doc: { summary: 'Delivery status', tag: TAG, response: deliveryView, errors: [404] },
      handler: async (ctx) => ok(deliveryToView(await findDelivery(ctx.app, ctx.tenantId, ctx.params[id]!))),
    },
    {
      ...common,
      path: `${base}/:${id}/attempts`,
      operationId: `${op}.attempts`,
      doc: { summary: 'Attempt history, newest first (HTTP status, truncated response body, timestamp, duration)', tag: TAG, response: attemptList, query: ['limit', 'cursor', 'offset'], errors: [404] },
      handler: async (ctx) => ok(listBody('attempts', await listAttempts(ctx.app, ctx.tenantId, ctx.params[id]!, ctx.query), attemptToView)),
    },
  ];
}

export const deliveryRoutes: AuthedRoute[] = [...deliveryReads('path'), ...deliveryReads('flat')];
