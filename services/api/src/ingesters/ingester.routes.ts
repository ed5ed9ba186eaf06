import type { RequestContext } from '../context';
import { findPage, readPage } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { STATE_FILTER_PARAMS, stateFilter } from '../lifecycle/state-filter';
import { created, ok } from '../lib/format';
import type { Ingester } from '../lib/models';
import { asModel } from '../lib/rows';
import { lifecycleRoutes } from '../lifecycle/lifecycle.routes';
import { createIngesterBody, ingesterView, updateIngesterBody, type IngesterBody } from './ingester.schema';
import { createIngester, findIngester, ingesterToView, updateIngester } from './ingester.service';

const BASE = '/v1/tenants/:tid/ingesters';
const TAG = 'Ingesters (endpoints)';

/** Shared by the tenant routes, the flat `/v1/endpoints` and the BFF cluster view. */
export async function listIngesters(ctx: RequestContext, plural: string, clusterId?: string): Promise<Record<string, unknown>> {
  const page = readPage(ctx.query, 'ing');
  const where = { tenantId: ctx.tenantId, ...stateFilter(ctx.query), ...(clusterId ? { clusterId } : {}) };
  const result = await findPage(page, (a) => ctx.app.prisma.ingester.findMany({ ...a, where: { ...where, ...a.where } }));
  return listBody(plural, result, (r) => ingesterToView(ctx.app, r));
}

export async function createIngesterReply(ctx: RequestContext, override: Partial<IngesterBody> = {}) {
  const row = await createIngester(ctx.app, { id: ctx.tenantId, plan: ctx.principal.plan }, { ...(ctx.body as IngesterBody), ...override });
  return created(ingesterToView(ctx.app, row));
}

const common = { auth: 'credential', tenant: 'path' } as const;

export const ingesterRoutes: AuthedRoute[] = [
  {
    ...common,
    method: 'get',
    path: BASE,
    operationId: 'ingesters.list',
    scope: 'read:ingesters',
    doc: { summary: 'List ingesters', tag: TAG, response: listOf('ingesters', ingesterView), query: ['limit', 'cursor', 'offset', ...STATE_FILTER_PARAMS] },
    handler: async (ctx) => ok(await listIngesters(ctx, 'ingesters')),
  },
  {
    ...common,
    method: 'post',
    path: BASE,
    operationId: 'ingesters.create',
    scope: 'write:ingesters',
    body: createIngesterBody,
    doc: {
      summary: 'Create an ingester; the response carries its hook_url',
      description:
        'state defaults to ACTIVE (events are accepted at once); send "state":"DRAFT" to create it unapplied. Signing secrets are write-only and stored encrypted; required_headers values are write-only too. Every config.ip_allowlist entry must be an IP address or CIDR range (400 naming the entry otherwise), and config.event_type_path a path ingest can evaluate (dotted names and indexes; 400 naming config.event_type_path otherwise); the allowlist needs the Pro plan, and once stored it is enforced whatever the plan. filters (optional) take a delivery flow\'s filter format and checks (400 naming filters.… fields); the router applies them ahead of every flow of the ingester (status_reason ingester_filter_rejected when they reject an event).',
      tag: TAG,
      response: ingesterView,
      errors: [403, 409, 422],
    },
    handler: (ctx) => createIngesterReply(ctx),
  },
  {
    ...common,
    method: 'get',
    path: `${BASE}/:iid`,
    operationId: 'ingesters.get',
    scope: 'read:ingesters',
    doc: { summary: 'Get one ingester', tag: TAG, response: ingesterView, errors: [404] },
    handler: async (ctx) => ok(ingesterToView(ctx.app, await findIngester(ctx.app, ctx.tenantId, ctx.params['iid']!))),
  },
  {
    ...common,
    method: 'put',
    path: `${BASE}/:iid`,
    operationId: 'ingesters.update',
    scope: 'write:ingesters',
    body: updateIngesterBody,
    doc: {
      summary: 'Replace an ingester (secrets kept unless new ones are sent or the provider changes)',
      description:
        'Replaces name, provider and config, checked as on create. A PUT that changes provider (or type) must send config.signing_secret or config.signing_secrets again when secrets are stored (400 validation-error naming config.signing_secret otherwise, nothing written): stored secrets were checked under the previous provider\'s rules. "[redacted]" as a required_headers value keeps the stored value. A stored ip_allowlist stays enforced after a plan downgrade: sending it unchanged or removing it needs no plan, changing it needs Pro or above. filters are checked as on create and replaced when sent; left out they are kept, null removes them.',
      tag: TAG,
      response: ingesterView,
      errors: [403, 404, 409, 422],
    },
    handler: async (ctx) =>
      ok(ingesterToView(ctx.app, await updateIngester(ctx.app, { id: ctx.tenantId, plan: ctx.principal.plan }, ctx.params['iid']!, ctx.body as IngesterBody))),
  },
  ...lifecycleRoutes({
    kind: 'ingester',
    itemPath: `${BASE}/:iid`,
    idParam: 'iid',
    operationPrefix: 'ingesters',
    tag: TAG,
    scope: 'write:ingesters',
    view: ingesterView,
    toView: (ctx, row) => ingesterToView(ctx.app, asModel<Ingester>(row)),
  }),
];
