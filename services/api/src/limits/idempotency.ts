import { createHash } from 'node:crypto';
import { AppError } from '@hookline/errors';
import type { AppContext } from '../context';

/**
 * Idempotency-Key on writes (24 h). Records are kept per tenant and per actor, the
 * credential that made the request (`api_key:<id>`, `mcp_key:<id>`, `user:<id>`,
 * `cluster:<id>`, as audited): another credential's request under the same key and body is
 * not a replay but a request of its own, authorized and run as any other. A stored answer
 * may hold a secret shown once (a created key, a signing secret, a cluster's hmac_key), and
 * checks that depend on the caller (the scopes it may grant, a rate-limit cap) run only when
 * a request runs, so only the credential that made it gets it back.
 *
 * The first request claims the key with an in-flight row (status 0); the finished response
 * is stored sealed. Same key + same request → the stored status and body; different request
 * → 409 idempotency-conflict. A claim left in flight for a minute (crashed process) is
 * retaken.
 */
const TTL = `interval '24 hours'`;
const STALE_CLAIM = `interval '60 seconds'`;

export type IdempotencyStart = { kind: 'claimed' } | { kind: 'replay'; status: number; body: unknown };

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonical(body)}`).digest('hex');
}

export function validIdempotencyKey(key: string): boolean {
  return /^[\x21-\x7e]{1,255}$/.test(key);
}

/** The record scope: the tenant acted on and the acting credential. */
function scopeOf(tenantId: string, actor: string): string {
  return `api:${tenantId}:${actor}`;
}

export async function startIdempotent(app: AppContext, tenantId: string, actor: string, key: string, hash: string): Promise<IdempotencyStart> {
  const scope = scopeOf(tenantId, actor);
  const claimed = await app.pool.query(
    `INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at)
     VALUES ($1, $2, $3, $4, 0, NULL, now() + ${TTL})
     ON CONFLICT (scope, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status_code = 0, response_body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_records.expires_at < now()
          OR (idempotency_records.status_code = 0 AND idempotency_records.created_at < now() - ${STALE_CLAIM})
     RETURNING key`,
    [scope, key, tenantId, hash],
  );
  if (claimed.rowCount) return { kind: 'claimed' };
  const { rows } = await app.pool.query<{ request_hash: string; status_code: number; response_body: { sealed?: string } | null }>(
    'SELECT request_hash, status_code, response_body FROM idempotency_records WHERE scope = $1 AND key = $2',
    [scope, key],
  );
  const row = rows[0];
  if (!row) return startIdempotent(app, tenantId, actor, key, hash); // deleted in between: claim again
  if (row.request_hash !== hash) {
    throw new AppError('idempotency-conflict', 'This Idempotency-Key was already used with a different request.', { idempotency_key: key });
  }
  if (row.status_code === 0) throw new AppError('conflict', 'A request with this Idempotency-Key is still being processed; retry later.');
  const sealed = row.response_body?.sealed;
  return { kind: 'replay', status: row.status_code, body: sealed ? (JSON.parse(app.box.open(sealed)) as unknown) : undefined };
}

/** Stores the outcome; a server error releases the key instead, so a retry runs again. */
export async function finishIdempotent(app: AppContext, tenantId: string, actor: string, key: string, status: number, body: unknown): Promise<void> {
  const scope = scopeOf(tenantId, actor);
  if (status >= 500) {
    await app.pool.query('DELETE FROM idempotency_records WHERE scope = $1 AND key = $2 AND status_code = 0', [scope, key]);
    return;
  }
  const sealed = body === undefined ? null : { sealed: app.box.seal(JSON.stringify(body)) };
  await app.pool.query('UPDATE idempotency_records SET status_code = $3, response_body = $4 WHERE scope = $1 AND key = $2 AND status_code = 0', [scope, key, status, sealed]);
}
