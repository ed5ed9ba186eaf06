import { queueDepths } from '@hookline/queues';
import type { RequestContext } from '../context';
import type { AuthedRoute } from '../http/route';
import { ok } from '../lib/format';
import { CAPABILITIES } from './capabilities';
import { evidenceReadiness } from './evidence';
import { OPEN_DELIVERIES_CAP, openDeliveries } from './open-deliveries';

type Check = { ok: true } & Record<string, unknown>;

/**
 * Readiness for a tenant's credential: a status per check and the tenant's own figures (its
 * open deliveries, its evidence pipeline; never the shared queues' depths, which are every
 * tenant's traffic). Why a check failed
 * (driver and connection messages, hosts, internal names) goes to the log, never to the
 * caller.
 */
async function readiness(ctx: RequestContext): Promise<Record<string, unknown>> {
  const { app, tenantId } = ctx;
  const run = async (name: string, check: () => Promise<Check>): Promise<Check | { ok: false }> => {
    try {
      return await check();
    } catch (err) {
      ctx.logger.warn('readiness check failed', { check: name, err: (err as Error).message });
      return { ok: false };
    }
  };
  const database = await run('database', async () => (await app.pool.query('SELECT 1'), { ok: true }));
  const redis = await run('redis', async () => (await app.redis.ping(), { ok: true }));
  // The shared queues' depths are every tenant's traffic: readable or not, and the tenant's own backlog instead.
  const queues = redis.ok ? await run('queues', async () => (await queueDepths(app.producer), { ok: true })) : { ok: false };
  const deliveries = database.ok ? await run('deliveries', async () => ({ ok: true, ...(await openDeliveries(app.pool, tenantId)) })) : { ok: false };
  // The evidence figures are evidence: shown to a credential that may read evidence.
  const shown = ctx.principal.scopes.has('read:evidence');
  const evidence = database.ok
    ? await run('evidence', async () => {
        const figures = await evidenceReadiness(app, tenantId);
        return { ...(shown ? figures : {}), ok: true };
      })
    : { ok: false };
  const ready = database.ok && redis.ok && queues.ok && deliveries.ok && evidence.ok;
  return { status: ready ? 'ready' : 'degraded', checks: { database, redis, queues, deliveries, evidence } };
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
    // Whether deliveries can flow is delivery status: the closest scope of API_SCOPES.
    scope: 'read:deliveries',
    doc: {
      summary: "Readiness across domains: database, Redis, the delivery queues, the tenant's open deliveries and its evidence pipeline (receipts awaiting a Merkle root, latest root)",
      description:
        'Needs `read:deliveries`: whether deliveries can flow (database, Redis, the delivery queues) is delivery status, so the scope that reads delivery status reads this too (no scope of its own; SPEC lists none for it). ' +
        'Each check reports `ok` only, never why it failed (that is logged). `queues` is `ok` alone: the `route` and `deliver` queues are shared by every tenant, so their depths (every tenant\'s traffic) are not shown; `deliveries` is the tenant\'s own backlog: `open` counts its pending, failed and replaying deliveries up to ' + String(OPEN_DELIVERIES_CAP) + ' (`open_capped` true when there are more); `evidence` is the calling tenant\'s own: its figures (receipts awaiting a Merkle root, latest root) only for a credential that also holds `read:evidence`, otherwise `ok` alone.',
      tag: TAG,
      response: { type: 'object', required: ['status', 'checks'] },
    },
    handler: async (ctx) => ok(await readiness(ctx)),
  },
];
