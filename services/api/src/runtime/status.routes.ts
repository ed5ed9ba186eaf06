import { queueDepths } from '@hookline/queues';
import type { AppContext } from '../context';
import type { AuthedRoute } from '../http/route';
import { ok } from '../lib/format';
import { CAPABILITIES } from './capabilities';
import { evidenceReadiness } from './evidence';

async function readiness(app: AppContext, tenantId: string): Promise<Record<string, unknown>> {
  const database = await app.pool.query('SELECT 1').then(() => ({ ok: true }), (e: Error) => ({ ok: false, error: e.message }));
  const redis = await app.redis.ping().then(() => ({ ok: true }), (e: Error) => ({ ok: false, error: e.message }));
  const queues = redis.ok ? await queueDepths(app.producer).then((depths) => ({ ok: true, depths }), (e: Error) => ({ ok: false, error: e.message })) : { ok: false, error: 'redis unavailable' };
  const evidence = database.ok ? await evidenceReadiness(app, tenantId).catch((e: Error) => ({ ok: false, error: e.message })) : { ok: false, error: 'database unavailable' };
  const ready = database.ok && redis.ok && queues.ok && evidence['ok'] === true;
  return { status: ready ? 'ready' : 'degraded', checks: { database, redis, queues, evidence } };
}

const TAG = 'Status';

export const statusRoutes: AuthedRoute[] = [
  {
    auth: 'credential',
    tenant: 'flat',
    method: 'get',
    path: '/v1/capabilities',
    operationId: 'status.capabilities',
    doc: {
      summary: 'What this deployment really implements (implemented, partial, planned, not_offered)',
      tag: TAG,
      response: { type: 'object', required: ['capabilities'], properties: { capabilities: { type: 'array', items: { type: 'object', required: ['id', 'name', 'status'] } } } },
    },
    handler: async () => ok({ capabilities: CAPABILITIES }),
  },
  {
    auth: 'credential',
    tenant: 'flat',
    method: 'get',
    path: '/v1/readiness',
    operationId: 'status.readiness',
    doc: { summary: "Readiness across domains: database, Redis, queue depths, and the tenant's evidence pipeline (receipts awaiting a Merkle root, latest root)", tag: TAG, response: { type: 'object', required: ['status', 'checks'] } },
    handler: async (ctx) => ok(await readiness(ctx.app, ctx.tenantId)),
  },
];
