import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import { AppError } from '@hookline/errors';
import { parseServiceSignature, verifyServiceSignature } from '@hookline/signing';
import { acceptSignatureOnce } from '../auth/signature-once';
import type { EdgeDeps } from './edge-deps';

export interface EdgeCluster {
  id: string;
  tenantId: string;
  /**
   * The key the request was signed with, as stored (sealed): the cluster's `key_encrypted`,
   * or `previous_key_encrypted` during a rotation's grace period. A long-poll authenticates
   * once and then leases for up to EDGE_MAX_WAIT_SECONDS: each of its lease statements
   * requires the cluster still ACTIVE and this key still valid (lease-work.ts LEASE_SQL),
   * so a disable, a delete or a rotation that revokes the key also stops a poll already open.
   * Each seal has its own random IV, so the sealed text names one key of one rotation.
   */
  signedWith: string;
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** Why a signed cluster request was refused: logged, never answered. */
type EdgeAuthReason =
  | 'unknown_cluster'
  | 'cluster_not_active'
  | 'key_does_not_open'
  | 'missing_header'
  | 'bad_format'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'replayed';

/** The one answer to every refused agent request, whatever the reason. */
export const EDGE_AUTH_DETAIL = 'The cluster request could not be authenticated.';

// The same answer for an unknown cluster, a non-ACTIVE one, a wrong or rotated-out key, a
// stale timestamp, a missing header and a replay: status, type, title and detail do not
// depend on the cluster id, so the answers do not tell which cluster ids exist (nor anything
// about them or their deliveries). The real reason is logged (edge-auth.ts refuse).
const rejected = (): AppError => new AppError('unauthorized', EDGE_AUTH_DETAIL, {}, { 'WWW-Authenticate': 'X-Service-Signature' });

// Verified against when the cluster is unknown or not ACTIVE, so that such a request costs
// what a known cluster's does (the same number of HMACs over the same body) rather than
// answering before any. Random per process: nothing signed can match them.
const DUMMY_KEYS: readonly string[] = [`hkc_${randomBytes(32).toString('base64url')}`, `hkc_${randomBytes(32).toString('base64url')}`];

interface ClusterRow {
  id: string;
  tenant_id: string;
  key_encrypted: string;
  /** The rotated-out key, only while its grace period lasts (database clock). */
  previous_key_encrypted: string | null;
  state: string;
}

/**
 * The keys a request of this cluster may be signed with: the current one and, during a
 * rotation's grace period, the previous one; always two, padded with a dummy, so that a
 * refusal costs the same with or without a previous key. Null when the current key does not
 * open (a wrong SECRETS_KEY); a previous key that does not open is left out.
 */
/** What authenticating a signed cluster request needs (the edge routes' deps, or the heartbeat's). */
export type ClusterAuthDeps = Pick<EdgeDeps, 'pool' | 'redis' | 'prefix' | 'logger' | 'openSecret'> & { toleranceSeconds: number };

function keysOf(deps: Pick<EdgeDeps, 'openSecret'>, row: ClusterRow): string[] | null {
  const current = deps.openSecret(row.key_encrypted);
  if (!current) return null;
  const previous = row.previous_key_encrypted === null ? null : deps.openSecret(row.previous_key_encrypted);
  return [current, previous ?? DUMMY_KEYS[1]!];
}

/**
 * Checks an agent request: `X-Service-Signature: t=<ts>,v1=<hex HMAC-SHA256(cluster key,
 * "<t>.<raw body>")>` with `X-Service-Timestamp` (required, equal to t), within EDGE_SIGNATURE_TOLERANCE_SECONDS,
 * from an ACTIVE cluster, signed with its current key or, until `previous_key_expires_at`,
 * the key its last rotation replaced (cluster.routes.ts rotate-key). Each signed message is
 * accepted once (acceptSignatureOnce: a Redis key lives for twice the window; Redis
 * unreachable → 503): a captured request, however its header is respelled, cannot be
 * replayed to lease deliveries.
 *
 * Every refusal is the same 401 (EDGE_AUTH_DETAIL), and an unknown or non-ACTIVE cluster's
 * request is still verified (against dummy keys), so neither the answer nor its timing says
 * whether the cluster exists; the reason is logged at warn with the cluster id and the
 * request id, never a key or signature.
 */
export function verifyEdgeRequest(deps: EdgeDeps, req: Request): Promise<EdgeCluster> {
  return authenticateCluster({ ...deps, toleranceSeconds: deps.config.EDGE_SIGNATURE_TOLERANCE_SECONDS }, req);
}

/**
 * A signed cluster request (route param `cid`), for the edge agent routes and the heartbeat
 * alike: the cluster (ACTIVE, current key or the previous one within its grace period), or
 * the one refusal whatever the reason (logged).
 */
export async function authenticateCluster(deps: ClusterAuthDeps, req: Request): Promise<EdgeCluster> {
  const cid = String(req.params['cid'] ?? '');
  const { rows } = await deps.pool.query<ClusterRow>(
    `SELECT id, tenant_id, key_encrypted, state::text AS state,
            CASE WHEN previous_key_expires_at > now() THEN previous_key_encrypted END AS previous_key_encrypted
       FROM clusters WHERE id = $1`,
    [cid],
  );
  const row = rows[0];
  const keys = row && row.state === 'ACTIVE' ? keysOf(deps, row) : null;
  const raw = (req as Request & { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0);
  const signature = one(req.headers['x-service-signature']);
  const tolerance = deps.toleranceSeconds;
  const timestampHeader = one(req.headers['x-service-timestamp']);
  const now = Math.floor(Date.now() / 1000);
  const verify = (against: string[]) => verifyServiceSignature(against, raw, signature, timestampHeader, tolerance, now, { requireTimestampHeader: true });
  const result = verify([...(keys ?? DUMMY_KEYS)]);
  const refuse = (reason: EdgeAuthReason): AppError => {
    deps.logger.warn('refused a signed cluster request', {
      cluster_id: cid.slice(0, 64),
      auth_failure: reason,
      ...(row && reason === 'cluster_not_active' ? { cluster_state: row.state } : {}),
      request_id: (req.res?.locals['requestId'] as string | undefined) ?? null,
    });
    return rejected();
  };
  if (!row) throw refuse('unknown_cluster');
  if (row.state !== 'ACTIVE') throw refuse('cluster_not_active');
  if (!keys) throw refuse('key_does_not_open');
  if (!result.ok) throw refuse(result.reason);
  // Verified, so the header parses and carries t. Single use is keyed by the signed message
  // (cluster, t, body), not by the header's spelling nor by the key (signature-once.ts).
  const timestamp = parseServiceSignature(signature!).t!;
  if (!(await acceptSignatureOnce(deps.redis, deps.prefix, { clusterId: row.id, timestamp, body: raw }, tolerance))) throw refuse('replayed');
  // Which key it was: the current one unless, during a grace period, only the previous one
  // verifies (one more HMAC, for accepted requests of a cluster in a grace period only).
  const byPrevious = row.previous_key_encrypted !== null && !verify([keys[0]!]).ok;
  return { id: row.id, tenantId: row.tenant_id, signedWith: byPrevious ? row.previous_key_encrypted! : row.key_encrypted };
}
