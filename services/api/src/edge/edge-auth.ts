import type { Request } from 'express';
import { AppError } from '@hookline/errors';
import { parseServiceSignature, verifyServiceSignature } from '@hookline/signing';
import { acceptSignatureOnce } from '../auth/signature-once';
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
 * "<t>.<raw body>")>` with `X-Service-Timestamp` (required, equal to t), within EDGE_SIGNATURE_TOLERANCE_SECONDS,
 * from an ACTIVE cluster. Each signed message is accepted once (acceptSignatureOnce: a Redis
 * key lives for twice the window; Redis unreachable → 503): a captured request, however its
 * header is respelled, cannot be replayed to lease deliveries.
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
  const result = verifyServiceSignature([key], raw, signature, one(req.headers['x-service-timestamp']), tolerance, undefined, { requireTimestampHeader: true });
  if (!result.ok) throw rejected(result.reason);
  // Verified, so the header parses and carries t. Single use is keyed by the signed message
  // (cluster, t, body), not by the header's spelling (signature-once.ts).
  const timestamp = parseServiceSignature(signature!).t!;
  if (!(await acceptSignatureOnce(deps.redis, deps.prefix, { clusterId: row.id, timestamp, body: raw }, tolerance))) throw rejected('replayed');
  return { id: row.id, tenantId: row.tenant_id };
}
