import { createHash } from 'node:crypto';
import { AppError } from '@hookline/errors';
import type { Redis } from '@hookline/queues';

/** What one signed cluster request is: the signature covers `"<t>.<raw body>"` and nothing else. */
export interface SignedRequest {
  clusterId: string;
  /** The signature's `t` (unix seconds). */
  timestamp: number;
  body: Buffer;
}

/** The Redis key that marks a signed message of a cluster as used. */
export function signatureOnceKey(prefix: string, r: SignedRequest): string {
  const digest = createHash('sha256').update(`${r.timestamp}.`).update(r.body).digest('hex');
  return `${prefix}:cluster-sig:${r.clusterId}:${r.timestamp}:${digest}`;
}

/**
 * Accepts each signed cluster request once: true the first time, false for a replay. Call
 * it only after the signature was verified (nobody else can fill the key space).
 *
 * The key is the signed message itself (cluster, t, sha256 of "<t>.<body>"), not the
 * `X-Service-Signature` header as sent: the header has several spellings that verify
 * (spaces after commas, upper-case hex, extra `v1=` entries), each a different string. It
 * names no route either: the signature does not cover the path, so a message used on one
 * cluster-signed route is used on all of them. Two requests with the same body in the same
 * second are one message: a client sends a fresh timestamp or body each time.
 *
 * The mark lives for twice the tolerance: a signature is valid from t − tolerance to
 * t + tolerance, so it outlives every moment at which a copy would still verify.
 *
 * Redis unreachable (or not answering within REDIS_COMMAND_TIMEOUT_MS): fails closed with
 * 503 `service-unavailable`, as the edge agent endpoints do (services/api/src/edge/edge-auth.ts):
 * accepting unchecked would reopen the replay window for as long as the outage lasts.
 */
export async function acceptSignatureOnce(redis: Redis, prefix: string, r: SignedRequest, toleranceSeconds: number): Promise<boolean> {
  let fresh: string | null;
  try {
    fresh = await redis.set(signatureOnceKey(prefix, r), '1', 'PX', toleranceSeconds * 2000, 'NX');
  } catch {
    throw new AppError('service-unavailable', 'The replay check is unavailable; retry later.', {}, { 'Retry-After': '1' });
  }
  return fresh !== null;
}
