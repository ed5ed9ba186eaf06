import type { Request } from 'express';
import type { AppContext, Principal } from '../context';
import type { PlanName } from '../config';
import { createSecretCache } from '@hookline/delivery';
import type { SecretBox } from '@hookline/signing';
import { authenticateCluster } from '../edge/edge-auth';

// One cache of opened cluster keys per SecretBox (per app), as the edge routes keep (edge-deps.ts).
const caches = new WeakMap<SecretBox, (sealed: string) => string | null>();
function secretCacheOf(box: SecretBox): (sealed: string) => string | null {
  let cache = caches.get(box);
  if (!cache) caches.set(box, (cache = createSecretCache(box)));
  return cache;
}

/**
 * Cluster-originated requests (route param `:cid`, e.g. the heartbeat):
 *   X-Service-Timestamp: <unix seconds>   (required, equal to t)
 *   X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(cluster key, "<t>.<raw body>")>
 * Checked exactly as the edge agent's requests are (edge/edge-auth.ts authenticateCluster):
 * the cluster's current key, or the previous one during a rotation's grace period; each
 * signed request accepted once; t within SERVICE_SIGNATURE_TOLERANCE_SECONDS. Every refusal
 * is the same 401 (an unknown cluster looks like a wrong key; the reason is logged); Redis
 * unreachable is 503, the single-use check failing closed.
 */
export async function verifyClusterRequest(app: AppContext, req: Request): Promise<Principal> {
  const openSecret = secretCacheOf(app.box);
  const cluster = await authenticateCluster(
    { pool: app.pool, redis: app.redis, prefix: app.config.QUEUE_PREFIX, logger: app.logger, openSecret, toleranceSeconds: app.config.SERVICE_SIGNATURE_TOLERANCE_SECONDS },
    req,
  );
  const { rows } = await app.pool.query<{ plan: string }>('SELECT plan::text AS plan FROM tenants WHERE id = $1', [cluster.tenantId]);
  return { kind: 'cluster', id: cluster.id, tenantId: cluster.tenantId, plan: rows[0]!.plan as PlanName, scopes: new Set() };
}
