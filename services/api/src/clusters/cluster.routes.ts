import { randomBytes } from 'node:crypto';
import { AppError } from '@hookline/errors';
import { newId } from '@hookline/db';
import { findPage, readPage } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { announce, duplicateName, lockNames } from '../lib/config-writes';
import { created, iso, ok } from '../lib/format';
import type { Cluster } from '../lib/models';
import { readClusterStatus, type ClusterStatus } from '../edge/cluster-status';

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
    hmac_key: { type: 'string', description: 'Enrollment key for X-Service-Signature: only in the create response' },
  },
};

const createBody = { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1, maxLength: 200 } }, additionalProperties: false };
const heartbeatBody = { type: 'object', properties: { agent_version: { type: 'string', maxLength: 100 } }, additionalProperties: false };

const common = { auth: 'credential', tenant: 'path' } as const;

export const clusterRoutes: AuthedRoute[] = [
  {
    ...common,
    scope: 'read:clusters',
    method: 'get',
    path: BASE,
    operationId: 'clusters.list',
    doc: { summary: 'List clusters (edge planes)', tag: TAG, response: listOf('clusters', clusterView), query: ['limit', 'cursor', 'offset'] },
    handler: async (ctx) => {
      const result = await findPage(readPage(ctx.query), (a) => ctx.app.prisma.cluster.findMany({ ...a, where: { tenantId: ctx.tenantId, state: { not: 'DELETED' }, ...a.where } }));
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
    doc: { summary: 'Enroll a cluster; its HMAC key is in this response only', tag: TAG, response: clusterView, errors: [409] },
    handler: async (ctx) => {
      const name = (ctx.body as { name: string }).name;
      const key = `hkc_${randomBytes(32).toString('base64url')}`;
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
    path: `${BASE}/:id`,
    operationId: 'clusters.get',
    doc: { summary: 'Get one cluster', tag: TAG, response: clusterView, errors: [404] },
    handler: async (ctx) => {
      const row = await ctx.app.prisma.cluster.findFirst({ where: { id: ctx.params['id']!, tenantId: ctx.tenantId, state: { not: 'DELETED' } } });
      if (!row) throw AppError.notFound('cluster');
      return ok(toView(row, undefined, (await readClusterStatus(ctx.app.pool, [row])).get(row.id)));
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
        'Signed with the key issued at enrollment: X-Service-Timestamp: <unix s> (required, equal to t), X-Service-Signature: t=<unix s>,v1=<hex HMAC-SHA256(key, "<t>.<raw body>")>. ' +
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
