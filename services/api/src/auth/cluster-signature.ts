import type { Request } from 'express';
import { verifyServiceSignature } from '@hookline/signing';
import type { AppContext, Principal } from '../context';
import type { PlanName } from '../config';
import { unauthorized } from './api-key.auth';

/**
 * Cluster-originated requests (route param `:cid`):
 *   X-Service-Timestamp: <unix seconds>
 *   X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(cluster key, "<t>.<raw body>")>
 * The key is the one issued when the cluster was enrolled (stored sealed). Outside
 * SERVICE_SIGNATURE_TOLERANCE_SECONDS, or a wrong signature, → 401.
 */
export async function verifyClusterRequest(app: AppContext, req: Request): Promise<Principal> {
  const cid = typeof req.params['cid'] === 'string' ? req.params['cid'] : undefined;
  const cluster = cid
    ? await app.prisma.cluster.findUnique({ where: { id: cid }, select: { id: true, tenantId: true, keyEncrypted: true, state: true, tenant: { select: { plan: true } } } })
    : null;
  if (!cluster || cluster.state !== 'ACTIVE') throw unauthorized('The cluster signature is invalid.');
  const raw = (req as Request & { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0);
  const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
  const result = verifyServiceSignature(
    [app.box.open(cluster.keyEncrypted)],
    raw,
    one(req.headers['x-service-signature']),
    one(req.headers['x-service-timestamp']),
    app.config.SERVICE_SIGNATURE_TOLERANCE_SECONDS,
  );
  if (!result.ok) throw unauthorized(`The cluster signature was rejected (${result.reason}).`);
  return { kind: 'cluster', id: cluster.id, tenantId: cluster.tenantId, plan: cluster.tenant.plan as PlanName, scopes: new Set() };
}
