import type { Request } from 'express';
import { parseServiceSignature, verifyServiceSignature } from '@hookline/signing';
import type { AppContext, Principal } from '../context';
import type { PlanName } from '../config';
import { unauthorized } from './api-key.auth';
import { acceptSignatureOnce } from './signature-once';

/**
 * Cluster-originated requests (route param `:cid`):
 *   X-Service-Timestamp: <unix seconds>   (required, equal to t)
 *   X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(cluster key, "<t>.<raw body>")>
 * The key is the one issued when the cluster was enrolled (stored sealed). A missing
 * header, t outside SERVICE_SIGNATURE_TOLERANCE_SECONDS, a wrong signature, or a signed
 * request already accepted once (signature-once.ts) → 401. Redis unreachable → 503: the
 * single-use check fails closed, as the edge agent endpoints' does.
 */
export async function verifyClusterRequest(app: AppContext, req: Request): Promise<Principal> {
  const cid = typeof req.params['cid'] === 'string' ? req.params['cid'] : undefined;
  const cluster = cid
    ? await app.prisma.cluster.findUnique({ where: { id: cid }, select: { id: true, tenantId: true, keyEncrypted: true, state: true, tenant: { select: { plan: true } } } })
    : null;
  if (!cluster || cluster.state !== 'ACTIVE') throw unauthorized('The cluster signature is invalid.');
  const raw = (req as Request & { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0);
  const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
  const signature = one(req.headers['x-service-signature']);
  const tolerance = app.config.SERVICE_SIGNATURE_TOLERANCE_SECONDS;
  const result = verifyServiceSignature([app.box.open(cluster.keyEncrypted)], raw, signature, one(req.headers['x-service-timestamp']), tolerance, undefined, {
    requireTimestampHeader: true,
  });
  if (!result.ok) throw unauthorized(`The cluster signature was rejected (${result.reason}).`);
  // Verified, so the header parses and carries t.
  const timestamp = parseServiceSignature(signature!).t!;
  if (!(await acceptSignatureOnce(app.redis, app.config.QUEUE_PREFIX, { clusterId: cluster.id, timestamp, body: raw }, tolerance))) {
    throw unauthorized('The cluster signature was rejected (replayed): each signed request is accepted once.');
  }
  return { kind: 'cluster', id: cluster.id, tenantId: cluster.tenantId, plan: cluster.tenant.plan as PlanName, scopes: new Set() };
}
