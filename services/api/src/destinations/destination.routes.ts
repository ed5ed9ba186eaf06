import type { RequestContext } from '../context';
import { findPage, readPage } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { created, ok } from '../lib/format';
import type { Destination } from '../lib/models';
import { asModel } from '../lib/rows';
import { STATE_FILTER_PARAMS, stateFilter } from '../lifecycle/state-filter';
import { lifecycleRoutes } from '../lifecycle/lifecycle.routes';
import { createDestinationBody, destinationView, patchDestinationBody, type DestinationBody } from './destination.schema';
import { createDestination, destinationToView, findDestination, patchDestination } from './destination.service';

const BASE = '/v1/tenants/:tid/destinations';
const TAG = 'Destinations (targets)';

export async function listDestinations(ctx: RequestContext, plural: string): Promise<Record<string, unknown>> {
  const page = readPage(ctx.query, 'dst');
  const where = { tenantId: ctx.tenantId, ...stateFilter(ctx.query) };
  const result = await findPage(page, (a) => ctx.app.prisma.destination.findMany({ ...a, where: { ...where, ...a.where } }));
  return listBody(plural, result, (r) => destinationToView(r));
}

export async function createDestinationReply(ctx: RequestContext) {
  const { row, secret } = await createDestination(ctx.app, ctx.tenantId, ctx.body as DestinationBody & { name: string; url: string });
  return created(destinationToView(row, secret));
}

const common = { auth: 'credential', tenant: 'path' } as const;

export const destinationRoutes: AuthedRoute[] = [
  {
    ...common,
    method: 'get',
    path: BASE,
    operationId: 'destinations.list',
    scope: 'read:destinations',
    doc: { summary: 'List destinations', tag: TAG, response: listOf('destinations', destinationView), query: ['limit', 'cursor', 'offset', ...STATE_FILTER_PARAMS] },
    handler: async (ctx) => ok(await listDestinations(ctx, 'destinations')),
  },
  {
    ...common,
    method: 'post',
    path: BASE,
    operationId: 'destinations.create',
    scope: 'write:destinations',
    body: createDestinationBody,
    doc: {
      summary: 'Create a destination',
      description:
        'state defaults to ACTIVE. Without signing_secret a whsec_ secret is generated and returned once in signing_secret; a given one must be whsec_ followed by standard base64 of 24 to 64 bytes (400 validation-error naming signing_secret otherwise). The mTLS key is write-only.',
      tag: TAG,
      response: destinationView,
      errors: [409, 422],
    },
    handler: createDestinationReply,
  },
  {
    ...common,
    method: 'get',
    path: `${BASE}/:id`,
    operationId: 'destinations.get',
    scope: 'read:destinations',
    doc: { summary: 'Get one destination', tag: TAG, response: destinationView, errors: [404] },
    handler: async (ctx) => ok(destinationToView(await findDestination(ctx.app, ctx.tenantId, ctx.params['id']!))),
  },
  {
    ...common,
    method: 'patch',
    path: `${BASE}/:id`,
    operationId: 'destinations.update',
    scope: 'write:destinations',
    body: patchDestinationBody,
    doc: {
      summary: 'Update a destination (partial; config keys merged; secret rotation)',
      description:
        'config keys are merged; config.headers, when sent, replaces the stored headers. Credential values are write-only: a credential header sent back as "[redacted]" keeps its stored value, and so does the masked URL (https://user:****@host/…) for the URL password. ' +
        'Stored credentials are never carried to another origin or cluster: when url changes scheme, host or port, or cluster_id changes (onto an edge cluster, whose agents would send them, between clusters, or off one), every stored credential header (the names config.headers describes: authorization, cookie, and names containing auth, token, secret, passw, session, signature, …, e.g. X-Authtoken, JSESSIONID) must be sent again in clear in config.headers or left out of it (which removes it), and the URL password sent in clear or dropped. ' +
        'A "[redacted]" placeholder, a stored credential header kept by not sending config.headers, a masked URL across an origin change, or, on a cluster_id change, a URL password kept by leaving url out or sending it masked is a 400 validation-error naming each field (config.headers.<Name>, url), and nothing is written. ' +
        'A PATCH that leaves url out or changes only its path or query, and leaves cluster_id as it is, keeps them. The signing secret is not affected: it signs deliveries and is never sent. ' +
        'signing_secret (checked as on create) or rotate_signing_secret: true (a generated one, returned once) becomes the current secret and the previous one stays valid: deliveries carry one signature per active secret: in webhook-signature newest first, in X-Service-Signature newest last.',
      tag: TAG,
      response: destinationView,
      errors: [404, 409, 422],
    },
    handler: async (ctx) => {
      const { row, secret } = await patchDestination(ctx.app, ctx.tenantId, ctx.params['id']!, ctx.body as DestinationBody);
      return ok(destinationToView(row, secret));
    },
  },
  ...lifecycleRoutes({
    kind: 'destination',
    itemPath: `${BASE}/:id`,
    idParam: 'id',
    operationPrefix: 'destinations',
    tag: TAG,
    scope: 'write:destinations',
    view: destinationView,
    toView: (_ctx, row) => destinationToView(asModel<Destination>(row)),
  }),
];
