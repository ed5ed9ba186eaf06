/**
 * Delay before retry `failures` (1-based): exponential from `baseMs`, capped at `maxMs`,
 * with equal jitter (a value in [d/2, d]) so that agents cut off together do not all
 * come back in the same instant.
 */
export function backoffDelay(failures: number, baseMs: number, maxMs: number, random = Math.random): number {
  const d = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures, 1) - 1, 30));
  return Math.round(d / 2 + random() * (d / 2));
}

/**
 * The wait before the next try: the jittered backoff, or the service's `Retry-After`
 * when that is longer (SPEC.md Errors: 429 and 503 are retried honouring it).
 */
export function retryDelay(failures: number, backoff: { baseMs: number; maxMs: number }, retryAfterMs: number | null, random = Math.random): number {
  return Math.max(backoffDelay(failures, backoff.baseMs, backoff.maxMs, random), retryAfterMs ?? 0);
}
