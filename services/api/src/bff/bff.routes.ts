import { AppError } from '@hookline/errors';
import type { RequestContext } from '../context';
import type { AuthedRoute } from '../http/route';
import { listOf } from '../http/schemas';
import { createIngesterReply, listIngesters } from '../ingesters/ingester.routes';
import { createIngesterBody, ingesterView } from '../ingesters/ingester.schema';
import { STATE_FILTER_PARAMS } from '../lifecycle/state-filter';
import { ok } from '../lib/format';

const BASE = '/api/bff/v1/tenants/:tid/clusters/:cid/ingesters';
const TAG = 'Dashboard (BFF, internal)';

async function clusterOf(ctx: RequestContext): Promise<string> {
  const id = ctx.params['cid']!;
  if (!(await ctx.app.prisma.cluster.count({ where: { id, tenantId: ctx.tenantId, state: { not: 'DELETED' } } }))) throw AppError.notFound('cluster');
  return id;
}

/** The dashboard's per-cluster view of ingesters: same rows, same rules, internal contract. */
export const bffRoutes: AuthedRoute[] = [
  {
    auth: 'credential',
    tenant: 'path',
    scope: 'read:ingesters',
    method: 'get',
    path: BASE,
    operationId: 'bff.clusterIngesters.list',
    doc: { summary: 'Ingesters bound to a cluster (internal, app-facing)', tag: TAG, response: listOf('ingesters', ingesterView), query: ['limit', 'cursor', 'offset', ...STATE_FILTER_PARAMS], errors: [404] },
    handler: async (ctx) => ok(await listIngesters(ctx, 'ingesters', await clusterOf(ctx))),
  },
  {
    auth: 'credential',
    tenant: 'path',
    scope: 'write:ingesters',
    method: 'post',
    path: BASE,
    operationId: 'bff.clusterIngesters.create',
    body: createIngesterBody,
    doc: { summary: 'Create an ingester bound to a cluster (internal, app-facing)', tag: TAG, response: ingesterView, errors: [403, 404, 409, 422] },
    handler: async (ctx) => createIngesterReply(ctx, { cluster_id: await clusterOf(ctx) }),
  },
];
