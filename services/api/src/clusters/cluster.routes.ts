import { AppError } from '@hookline/errors';
import { newId } from '@hookline/db';
import { findPage, readPage } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { STATE_FILTER_PARAMS, stateFilter } from '../lifecycle/state-filter';
import { announce, duplicateName, lockNames } from '../lib/config-writes';
import { created, iso, ok } from '../lib/format';
import type { Cluster } from '../lib/models';
import type { RequestContext } from '../context';
import { readClusterStatus, type ClusterStatus } from '../edge/cluster-status';
import { assertMayIssueClusterKey, CLUSTER_KEY_NEEDS } from './cluster-key-grant';
import { changeClusterState, DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, newClusterKey, rotateClusterKey } from './cluster-lifecycle';

const TAG = 'Clusters';
const BASE = '/v1/tenants/:tid/clusters';

function toView(c: Cluster, hmacKey?: string, status?: ClusterStatus): Record<string, unknown> {
  return {
    id: c.id,
    name: c.name,
    state: c.state,
    last_seen_at: iso(c.lastSeenAt),
    agent_version: c.agentVersion,
    connected: status?.connected ?? false,
    in_flight: status?.in_flight ?? 0,
    created_at: iso(c.createdAt),
    key_rotated_at: iso(c.keyRotatedAt),
    // Only while it is still accepted (the edge endpoints compare with the database's clock).
    // The stored expiry while a previous key is kept: whether it is still accepted is decided
    // by the database's clock (edge-auth.ts), not this process's.
    previous_key_expires_at: c.previousKeyEncrypted && c.previousKeyExpiresAt ? iso(c.previousKeyExpiresAt) : null,
    ...(hmacKey ? { hmac_key: hmacKey } : {}),
  };
}

export const clusterView = {
  type: 'object',
  required: ['id', 'name', 'state', 'last_seen_at', 'created_at'],
  properties: {
    id: { type: 'string', pattern: '^cls_' },
    name: { type: 'string' },
    state: { type: 'string', enum: ['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED'] },
    last_seen_at: { type: ['string', 'null'], format: 'date-time' },
    agent_version: { type: ['string', 'null'] },
    connected: { type: 'boolean', description: 'an edge agent contacted the service within EDGE_CONNECTED_WINDOW_MS' },
    in_flight: { type: 'integer', description: 'deliveries leased to the cluster\'s agents, not reported yet' },
    created_at: { type: 'string', format: 'date-time' },
    key_rotated_at: { type: ['string', 'null'], format: 'date-time', description: 'when the current key was issued by rotate-key; null: the enrollment key' },
    previous_key_expires_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'until when the key replaced by the last rotate-key is still accepted (edge agent endpoints and heartbeat; by the database clock); null when there is no previous key',
    },
    hmac_key: { type: 'string', description: 'Key for X-Service-Signature (hkc_…): only in the create and rotate-key responses, never shown again' },
  },
};

const createBody = { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1, maxLength: 200 } }, additionalProperties: false };
// The body may be left out (all defaults): a null body is the same as {}.
const rotateBody = {
  type: ['object', 'null'],
  properties: {
    grace_seconds: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_GRACE_SECONDS,
      default: DEFAULT_GRACE_SECONDS,
      description: `how long the replaced key stays valid, so agents can be redeployed with the new one (default ${DEFAULT_GRACE_SECONDS}, at most ${MAX_GRACE_SECONDS} = 7 days); 0 revokes it at once`,
    },
  },
  additionalProperties: false,
};
const heartbeatBody = { type: 'object', properties: { agent_version: { type: 'string', maxLength: 100 } }, additionalProperties: false };

const common = { auth: 'credential', tenant: 'path' } as const;
const ITEM = `${BASE}/:id`;

async function loadView(ctx: RequestContext, id: string, hmacKey?: string): Promise<Record<string, unknown>> {
  const row = await ctx.app.prisma.cluster.findFirst({ where: { id, tenantId: ctx.tenantId, state: { not: 'DELETED' } } });
  if (!row) throw AppError.notFound('cluster');
  return toView(row, hmacKey, (await readClusterStatus(ctx.app.pool, [row])).get(row.id));
}

// What happens to the work of a cluster whose agents are refused (disable, delete, the end
// of a rotation's grace period), in the OpenAPI descriptions.
const LEASES =
  'Deliveries already leased to a refused agent are not taken back: its reports and releases are refused too, so each lease expires (EDGE_LEASE_MS, or the destination\'s timeout plus half of it) unreported, with no attempt recorded, and the delivery is free again: ' +
  'leased to an agent with a valid key of an ACTIVE cluster, else, once no agent of the cluster has been seen for EDGE_CONNECTED_WINDOW_MS and the delivery has waited EDGE_WAIT_LIMIT_MS (15 min by default), the deliverer\'s edge wait sweep records a failed attempt (edge_unavailable) and the usual retries and DLQ follow. ';
const REFUSED_AGENTS =
  'The agents\' requests (POST /v1/edge/clusters/{cid}/work, reports, releases) are answered with the same 401 as a wrong signature; a work long-poll already open leases nothing more and answers an empty deliveries list. ';

const KEY_GRANT = `Issuing a cluster key takes ${CLUSTER_KEY_NEEDS.join(', ')} besides write:clusters (an agent receives event bodies and destination credentials and reports deliveries): 403 insufficient-scope (required_scope, missing_scopes) otherwise, nothing changed.`;

export const clusterRoutes: AuthedRoute[] = [
  {
    ...common,
    scope: 'read:clusters',
    method: 'get',
    path: BASE,
    operationId: 'clusters.list',
    doc: { summary: 'List clusters (edge planes)', tag: TAG, response: listOf('clusters', clusterView), query: ['limit', 'cursor', 'offset', ...STATE_FILTER_PARAMS] },
    handler: async (ctx) => {
      const result = await findPage(readPage(ctx.query, 'cls'), (a) => ctx.app.prisma.cluster.findMany({ ...a, where: { tenantId: ctx.tenantId, ...stateFilter(ctx.query), ...a.where } }));
      const status = await readClusterStatus(ctx.app.pool, result.items);
      return ok(listBody('clusters', result, (c) => toView(c, undefined, status.get(c.id))));
    },
  },
  {
    ...common,
    scope: 'write:clusters',
    method: 'post',
    path: BASE,
    operationId: 'clusters.create',
    body: createBody,
    doc: { summary: 'Enroll a cluster; its HMAC key is in this response only', description: KEY_GRANT, tag: TAG, response: clusterView, errors: [409] },
    handler: async (ctx) => {
      assertMayIssueClusterKey(ctx.principal.scopes);
      const name = (ctx.body as { name: string }).name;
      const key = newClusterKey();
      const row = await ctx.app.prisma.$transaction(async (tx) => {
        await lockNames(tx, 'cluster', ctx.tenantId);
        if (await tx.cluster.count({ where: { tenantId: ctx.tenantId, name, state: { not: 'DELETED' } } })) throw duplicateName('cluster', name);
        return tx.cluster.create({ data: { id: newId('cls'), tenantId: ctx.tenantId, name, keyEncrypted: ctx.app.box.seal(key) } });
      });
      await announce(ctx.app, { kind: 'cluster', id: row.id, tenantId: ctx.tenantId });
      return created(toView(row, key));
    },
  },
  {
    ...common,
    scope: 'read:clusters',
    method: 'get',
    path: ITEM,
    operationId: 'clusters.get',
    doc: { summary: 'Get one cluster', tag: TAG, response: clusterView, errors: [404] },
    handler: async (ctx) => ok(await loadView(ctx, ctx.params['id']!)),
  },
  {
    ...common,
    scope: 'write:clusters',
    method: 'post',
    path: `${ITEM}/rotate-key`,
    operationId: 'clusters.rotateKey',
    body: rotateBody,
    doc: {
      summary: 'Rotate the cluster key; the new key is in this response only',
      description:
        'Issues a new key (hmac_key, shown once, like at enrollment; stored sealed with SECRETS_KEY) for an ACTIVE or DISABLED cluster. ' +
        'The key it replaces stays valid on the edge agent endpoints for grace_seconds (default 3600; the body may be left out), so the agents can be redeployed with the new key; previous_key_expires_at says until when. ' +
        'grace_seconds 0 revokes it at once: use it when the key leaked (or disable the cluster first, rotate, redeploy, enable); a work long-poll signed with a revoked key leases nothing more and answers an empty deliveries list. ' +
        'One previous key at most: rotating again during a grace period revokes the older key at once. ' +
        'POST /v1/clusters/{cid}/heartbeat is authenticated the same way (current or previous key, one answer for every refusal). ' +
        LEASES +
        KEY_GRANT +
        ' With Idempotency-Key, a repeated request returns the same key and rotates nothing more. Not in SPEC.md (which shows clusters as list and create only): modelled on Svix\'s and Convoy\'s secret rotation.',
      tag: TAG,
      status: 200,
      response: clusterView,
      errors: [404],
    },
    handler: async (ctx) => {
      assertMayIssueClusterKey(ctx.principal.scopes);
      const id = ctx.params['id']!;
      const grace = (ctx.body as { grace_seconds?: number } | null | undefined)?.grace_seconds ?? DEFAULT_GRACE_SECONDS;
      // The answer is the row the rotation wrote (and its status read in its transaction):
      // nothing after the commit can fail it.
      const { row, status, key } = await rotateClusterKey(ctx.app, ctx.tenantId, id, grace);
      return ok(toView(row, key, status));
    },
  },
  {
    ...common,
    scope: 'write:clusters',
    method: 'post',
    path: `${ITEM}/disable`,
    operationId: 'clusters.disable',
    doc: {
      summary: 'Stop an ACTIVE cluster (→ DISABLED); its agents are refused at once',
      description:
        'ACTIVE → DISABLED (any other state: 409 with current_state): the cluster\'s agents are refused from their next request on, whatever key they hold. ' +
        REFUSED_AGENTS +
        LEASES +
        'Its destinations are not disabled: their new deliveries wait for the cluster like those of a cluster with no agent connected. enable lets the agents in again; rotate-key first if the key leaked.',
      tag: TAG,
      status: 200,
      response: clusterView,
      errors: [404, 409],
    },
    handler: async (ctx) => {
      const { row, status } = await changeClusterState(ctx.app, ctx.tenantId, ctx.params['id']!, 'disable');
      return ok(toView(row, undefined, status));
    },
  },
  {
    ...common,
    scope: 'write:clusters',
    method: 'post',
    path: `${ITEM}/enable`,
    operationId: 'clusters.enable',
    doc: {
      summary: 'Re-enable a DISABLED cluster (→ ACTIVE)',
      description: 'DISABLED → ACTIVE (any other state: 409 with current_state): agents signing with the current key (or a previous key still in its grace period) are served again.',
      tag: TAG,
      status: 200,
      response: clusterView,
      errors: [404, 409],
    },
    handler: async (ctx) => {
      const { row, status } = await changeClusterState(ctx.app, ctx.tenantId, ctx.params['id']!, 'enable');
      return ok(toView(row, undefined, status));
    },
  },
  {
    ...common,
    scope: 'write:clusters',
    method: 'delete',
    path: ITEM,
    operationId: 'clusters.delete',
    doc: {
      summary: 'Delete a cluster (DISABLED → DELETED; disable an ACTIVE cluster first)',
      description:
        'DRAFT or DISABLED → DELETED, as for the other configuration objects: an ACTIVE cluster is 409 (disable it first), and so is a cluster still used by a destination or an ingester that is not DELETED ' +
        '(destinations and ingesters: how many; destination_ids, ingester_ids: up to 20 of each): move them off it (cluster_id) or delete them first. ' +
        'A deleted cluster is hidden, frees its name, cannot be recovered, and its agents stay refused (401). Its previous key, if any, is dropped.',
      tag: TAG,
      status: 200,
      response: { type: 'object', required: ['id', 'state'], properties: { id: { type: 'string' }, state: { const: 'DELETED' } } },
      errors: [404, 409],
    },
    handler: async (ctx) => {
      const id = ctx.params['id']!;
      await changeClusterState(ctx.app, ctx.tenantId, id, 'delete');
      return ok({ id, state: 'DELETED' });
    },
  },
  {
    auth: 'cluster',
    tenant: 'flat',
    method: 'post',
    path: '/v1/clusters/:cid/heartbeat',
    operationId: 'clusters.heartbeat',
    body: heartbeatBody,
    audit: false,
    doc: {
      summary: 'Cluster heartbeat (HMAC-signed by the cluster)',
      description:
        'Signed with the cluster\'s current key (issued at enrollment or by the last rotate-key; or a previous key still in its grace period) by an ACTIVE cluster: X-Service-Timestamp: <unix s> (required, equal to t), X-Service-Signature: t=<unix s>,v1=<hex HMAC-SHA256(key, "<t>.<raw body>")>. ' +
        'A missing header, t outside SERVICE_SIGNATURE_TOLERANCE_SECONDS, a wrong signature, or a signed request already accepted (each is accepted once: sign every heartbeat afresh) → 401. ' +
        'The single-use check needs Redis: while it is unreachable → 503 (retry).',
      tag: TAG,
      status: 200,
      response: clusterView,
      errors: [503],
    },
    handler: async (ctx) => {
      const v = (ctx.body as { agent_version?: string } | undefined)?.agent_version;
      const row = await ctx.app.prisma.cluster.update({ where: { id: ctx.principal.id }, data: { lastSeenAt: new Date(), ...(v ? { agentVersion: v } : {}) } });
      return ok(toView(row, undefined, (await readClusterStatus(ctx.app.pool, [row])).get(row.id)));
    },
  },
];
