import { queueDepths } from '@hookline/queues';
import type { AppContext } from '../context';
import type { AuthedRoute } from '../http/route';
import { ok } from '../lib/format';
import { CAPABILITIES } from './capabilities';

async function readiness(app: AppContext): Promise<Record<string, unknown>> {
  const database = await app.pool.query('SELECT 1').then(() => ({ ok: true }), (e: Error) => ({ ok: false, error: e.message }));
  const redis = await app.redis.ping().then(() => ({ ok: true }), (e: Error) => ({ ok: false, error: e.message }));
  const queues = redis.ok ? await queueDepths(app.producer).then((depths) => ({ ok: true, depths }), (e: Error) => ({ ok: false, error: e.message })) : { ok: false, error: 'redis unavailable' };
  const ready = database.ok && redis.ok && queues.ok;
  return { status: ready ? 'ready' : 'degraded', checks: { database, redis, queues } };
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
    doc: { summary: 'Readiness across domains: database, Redis, queue depths', tag: TAG, response: { type: 'object', required: ['status', 'checks'] } },
    handler: async (ctx) => ok(await readiness(ctx.app)),
  },
];
