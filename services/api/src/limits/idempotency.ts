import { createHash, randomUUID } from 'node:crypto';
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
 * The first request claims the key with an in-flight row (status 0) holding a token of its
 * own, the time it was last known alive and whether its handler may have started
 * (`response_body` = {claim, alive_at, started}); the finished response is stored sealed.
 * Same key + same request → the stored status and body; different request → 409
 * idempotency-conflict; the same request while the first still runs → 409 conflict ("still
 * being processed"), however long it runs.
 *
 * Once the handler has started, its outcome is the key's whatever it is, as Stripe's keys
 * work ("subsequent requests with the same key return the same result, including 500
 * errors"): a 5xx is stored and replayed like any answer, since the write may have been
 * applied before the failure and a retry must not apply it again. The key is released (the
 * claim deleted) only when the handler never ran: the claim is marked started just before it
 * runs (runIdempotent), and a failure to mark it releases it. Refusals before the claim
 * (authentication, tenant, scope, body validation) store nothing.
 *
 * Liveness decides whether a claim may be retaken: the owning request refreshes `alive_at`
 * every quarter of IDEMPOTENCY_STALE_CLAIM_MS (60 s by default) while it runs (waiting on
 * locks included: the api sets no statement or lock timeout, so a request has no upper
 * bound). A claim not refreshed for IDEMPOTENCY_STALE_CLAIM_MS lost its request (its process
 * died, or it could not store its outcome): when that request's handler never started
 * (`started` false) a retry takes the claim over and runs; when it may have started, nothing
 * runs again: 409 idempotency-outcome-unknown (the first request may have been applied; the
 * client checks the resource, then uses a new key). A claim written before `started` existed
 * counts as started. The owner marks and stores only while it still holds its own claim.
 */
const TTL = `interval '24 hours'`;
const DEFAULT_STALE_CLAIM_MS = 60_000;

export interface IdempotencyClaim {
  kind: 'claimed';
  scope: string;
  key: string;
  /** This request's own claim: finishIdempotent stores only under it. */
  token: string;
  /** Keeps `alive_at` fresh while the request runs; stopped once its outcome is stored or the key released. */
  heartbeat: NodeJS.Timeout;
}

export type IdempotencyStart = IdempotencyClaim | { kind: 'replay'; status: number; body: unknown };

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

function staleClaimMs(app: AppContext): number {
  return app.config.IDEMPOTENCY_STALE_CLAIM_MS ?? DEFAULT_STALE_CLAIM_MS;
}

// An in-flight claim: its token, when its request was last known alive, and whether its
// handler may have started (set just before it runs: markStarted).
const CLAIM = `jsonb_build_object('claim', $5::text, 'alive_at', now(), 'started', false)`;
// When a claim's request was last known alive (a claim from before `alive_at`: its created_at).
const ALIVE_AT = `COALESCE((idempotency_records.response_body->>'alive_at')::timestamptz, idempotency_records.created_at)`;
// The claim is held by `token` (and still in flight).
const HELD = `scope = $1 AND key = $2 AND status_code = 0 AND response_body->>'claim' = $3`;

/**
 * Refreshes the claim's `alive_at` every quarter of the stale window while the request
 * runs; stops when the claim is no longer this request's (finished or retaken). A failed
 * refresh is logged and tried again at the next beat: the window allows three misses. A
 * beat is skipped while the previous one is still waiting (for a pool connection, say), so
 * beats never queue up. Beats use the api's claim pool (ApiDeps.claimPool), not the pool the
 * requests hold while they wait. `created_at` moves with `alive_at`: replicas of the previous release
 * judge a claim by it alone.
 */
function startHeartbeat(app: AppContext, scope: string, key: string, token: string): NodeJS.Timeout {
  let pending = false;
  const timer: NodeJS.Timeout = setInterval(() => {
    if (pending) return;
    pending = true;
    (app.claimPool ?? app.pool)
      .query(`UPDATE idempotency_records SET response_body = jsonb_set(response_body, '{alive_at}', to_jsonb(now())), created_at = now() WHERE ${HELD}`, [scope, key, token])
      .then((r) => {
        if (!r.rowCount) clearInterval(timer);
      })
      .catch((err: Error) => app.logger.warn('could not refresh an Idempotency-Key claim', { scope, err: err.message }))
      .finally(() => {
        pending = false;
      });
  }, Math.max(100, Math.floor(staleClaimMs(app) / 4)));
  timer.unref();
  return timer;
}

export async function startIdempotent(app: AppContext, tenantId: string, actor: string, key: string, hash: string): Promise<IdempotencyStart> {
  const scope = scopeOf(tenantId, actor);
  const token = randomUUID();
  // Retaken: an expired record, or an in-flight claim whose request is gone (not heard from
  // for the stale window) and whose handler never started. `started` is read from the row as
  // it is once locked, so a claim marked started meanwhile is never retaken.
  const claimed = await app.pool.query(
    `INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at)
     VALUES ($1, $2, $3, $4, 0, ${CLAIM}, now() + ${TTL})
     ON CONFLICT (scope, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status_code = 0, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_records.expires_at < now()
          OR (idempotency_records.status_code = 0
              AND idempotency_records.response_body->>'started' = 'false'
              AND ${ALIVE_AT} < now() - $6::double precision * interval '1 millisecond')
     RETURNING key`,
    [scope, key, tenantId, hash, token, staleClaimMs(app)],
  );
  if (claimed.rowCount) return { kind: 'claimed', scope, key, token, heartbeat: startHeartbeat(app, scope, key, token) };
  const { rows } = await app.pool.query<{ request_hash: string; status_code: number; response_body: { sealed?: string; started?: boolean } | null; stale: boolean }>(
    `SELECT request_hash, status_code, response_body, ${ALIVE_AT} < now() - $3::double precision * interval '1 millisecond' AS stale
       FROM idempotency_records WHERE scope = $1 AND key = $2`,
    [scope, key, staleClaimMs(app)],
  );
  const row = rows[0];
  if (!row) return startIdempotent(app, tenantId, actor, key, hash); // deleted in between: claim again
  if (row.request_hash !== hash) {
    throw new AppError('idempotency-conflict', 'This Idempotency-Key was already used with a different request.', { idempotency_key: key });
  }
  // A claim that went stale between the takeover above and this read, its handler never
  // started: take it over now (the takeover checks again on the locked row).
  if (row.status_code === 0 && row.stale && row.response_body?.started === false) return startIdempotent(app, tenantId, actor, key, hash);
  if (row.status_code === 0 && row.stale) {
    // Not retaken above, so its handler may have started (or the claim predates `started`).
    throw new AppError(
      'idempotency-outcome-unknown',
      'The first request with this Idempotency-Key stopped before its outcome was recorded; it may have been applied. Check the resource, then retry with a new key.',
      { idempotency_key: key },
    );
  }
  if (row.status_code === 0) throw new AppError('conflict', 'A request with this Idempotency-Key is still being processed; retry later.');
  const sealed = row.response_body?.sealed;
  return { kind: 'replay', status: row.status_code, body: sealed ? (JSON.parse(app.box.open(sealed)) as unknown) : undefined };
}

/**
 * Marks the claim started, just before its handler runs (and refreshes `alive_at`): from then
 * on the claim is never retaken, and only its stored outcome answers the key. When the mark
 * cannot be written the handler does not run and the key is released; when the claim is no
 * longer this request's (retaken while this request was not heard from), another request
 * with the key runs: 409 still being processed.
 */
async function markStarted(app: AppContext, claim: IdempotencyClaim): Promise<void> {
  const { scope, key, token } = claim;
  let held: number | null;
  try {
    held = (
      await app.pool.query(`UPDATE idempotency_records SET response_body = response_body || jsonb_build_object('started', true, 'alive_at', now()), created_at = now() WHERE ${HELD}`, [
        scope,
        key,
        token,
      ])
    ).rowCount;
  } catch (err) {
    await releaseIdempotent(app, claim).catch((e: Error) => app.logger.warn('could not release an Idempotency-Key claim whose handler never ran', { scope, err: e.message }));
    throw err;
  }
  if (!held) {
    clearInterval(claim.heartbeat);
    throw new AppError('conflict', 'A request with this Idempotency-Key is still being processed; retry later.');
  }
}

/** Releases the key (deletes this request's own claim): only for a request whose handler never ran. */
export async function releaseIdempotent(app: AppContext, claim: IdempotencyClaim): Promise<void> {
  clearInterval(claim.heartbeat);
  await app.pool.query(`DELETE FROM idempotency_records WHERE ${HELD}`, [claim.scope, claim.key, claim.token]);
}

/**
 * Stores the outcome, whatever its status (a 5xx included), under this request's own claim.
 * A claim retaken meanwhile (this request's handler never started) is left to the request
 * that holds it.
 */
export async function finishIdempotent(app: AppContext, claim: IdempotencyClaim, status: number, body: unknown): Promise<void> {
  clearInterval(claim.heartbeat);
  const { scope, key, token } = claim;
  const sealed = body === undefined ? null : { sealed: app.box.seal(JSON.stringify(body)) };
  const stored = await app.pool.query(`UPDATE idempotency_records SET status_code = $4, response_body = $5 WHERE ${HELD}`, [scope, key, token, status, sealed]);
  if (!stored.rowCount) app.logger.warn('Idempotency-Key claim was retaken before the request finished; its outcome is not stored', { scope, status });
}

/**
 * Runs a claimed request's handler: marks the claim started (markStarted: nothing runs when
 * that fails), runs it, and stores its outcome, the problem it threw included (`failed` turns
 * an error into the answer it becomes), except a 503, which applied nothing and asks for a
 * retry: that releases the key. The handler's answer stands when the outcome cannot
 * be stored (logged): its effect is done, and the claim left in flight answers 409 still
 * being processed, then, once stale, 409 idempotency-outcome-unknown, never a second run.
 */
export async function runIdempotent<R extends { status: number; body?: unknown }>(
  app: AppContext,
  claim: IdempotencyClaim,
  run: () => Promise<R>,
  failed: (err: unknown) => { status: number; body?: unknown },
): Promise<R> {
  await markStarted(app, claim);
  const store = (status: number, body: unknown) =>
    finishIdempotent(app, claim, status, body).catch((e: Error) =>
      app.logger.error('Idempotency-Key outcome not stored; the key answers 409 until it expires', { scope: claim.scope, status, err: e.message }),
    );
  let out: R;
  try {
    out = await run();
  } catch (err) {
    const f = failed(err);
    // 503 service-unavailable: the database was unreachable or rolled the transaction back
    // whole (asServiceError), so nothing was applied and the answer asks for a retry after
    // Retry-After: the key is released for it, not pinned to the 503.
    if (f.status === 503) await releaseIdempotent(app, claim).catch((e: Error) => app.logger.warn('could not release an Idempotency-Key after a 503', { scope: claim.scope, err: e.message }));
    else await store(f.status, f.body);
    throw err;
  }
  await store(out.status, out.body);
  return out;
}
