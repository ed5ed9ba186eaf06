import { AppError } from '@hookline/errors';
import { hashApiKey } from '@hookline/signing';
import type { AppContext, Principal } from '../context';
import type { PlanName } from '../config';

// last_used_at is written at most this often per key, not on every request.
const LAST_USED_RESOLUTION_MS = 60_000;

export function unauthorized(detail = 'The credential is missing, invalid, revoked or expired.'): AppError {
  return new AppError('unauthorized', detail, {}, { 'WWW-Authenticate': 'Bearer' });
}

/** Resolves an `hk_…` API key: stored as sha256, must be unrevoked and unexpired. */
export async function authenticateApiKey(app: AppContext, key: string): Promise<Principal> {
  const row = await app.prisma.apiKey.findUnique({
    where: { keyHash: hashApiKey(key) },
    select: { id: true, tenantId: true, scopes: true, kind: true, revokedAt: true, expiresAt: true, lastUsedAt: true, tenant: { select: { plan: true } } },
  });
  const now = Date.now();
  if (!row || row.kind !== 'api' || row.revokedAt || (row.expiresAt && row.expiresAt.getTime() <= now)) throw unauthorized();
  if (!row.lastUsedAt || now - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    // Conditional, so that concurrent requests of one key write once; never blocks the request.
    app.pool
      .query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, [row.id])
      .catch((err: Error) => app.logger.warn('could not record api key use', { api_key_id: row.id, err: err.message }));
  }
  return { kind: 'api_key', id: row.id, tenantId: row.tenantId, plan: row.tenant.plan as PlanName, scopes: new Set(row.scopes), expiresAt: row.expiresAt };
}
