import type { Request } from 'express';
import { AppError } from '@hookline/errors';
import { verifyServiceSignature } from '@hookline/signing';
import type { EdgeDeps } from './edge-deps';

export interface EdgeCluster {
  id: string;
  tenantId: string;
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

// The same answer for an unknown cluster, a wrong key and a stale timestamp: nothing about
// the cluster or its deliveries is revealed before the signature holds.
const rejected = (reason: string): AppError => new AppError('unauthorized', `The cluster signature was rejected (${reason}).`, {}, { 'WWW-Authenticate': 'X-Service-Signature' });

/**
 * Checks an agent request: `X-Service-Signature: t=<ts>,v1=<hex HMAC-SHA256(cluster key,
 * "<t>.<raw body>")>` with `X-Service-Timestamp`, within EDGE_SIGNATURE_TOLERANCE_SECONDS,
 * from an ACTIVE cluster. Each signature is accepted once (a Redis key lives for twice the
 * window): a captured request cannot be replayed to lease deliveries.
 */
export async function verifyEdgeRequest(deps: EdgeDeps, req: Request): Promise<EdgeCluster> {
  const cid = String(req.params['cid'] ?? '');
  const { rows } = await deps.pool.query<{ id: string; tenant_id: string; key_encrypted: string; state: string }>(
    `SELECT id, tenant_id, key_encrypted, state FROM clusters WHERE id = $1`,
    [cid],
  );
  const row = rows[0];
  const key = row && row.state === 'ACTIVE' ? deps.openSecret(row.key_encrypted) : null;
  if (!row || !key) throw rejected('signature_mismatch');
  const raw = (req as Request & { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0);
  const signature = one(req.headers['x-service-signature']);
  const tolerance = deps.config.EDGE_SIGNATURE_TOLERANCE_SECONDS;
  const result = verifyServiceSignature([key], raw, signature, one(req.headers['x-service-timestamp']), tolerance);
  if (!result.ok) throw rejected(result.reason);
  let fresh: string | null;
  try {
    fresh = await deps.redis.set(`${deps.prefix}:edge-sig:${row.id}:${signature}`, '1', 'PX', tolerance * 2000, 'NX');
  } catch {
    throw new AppError('service-unavailable', 'The replay check is unavailable; retry later.');
  }
  if (fresh === null) throw rejected('replayed');
  return { id: row.id, tenantId: row.tenant_id };
}
