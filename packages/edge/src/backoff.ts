/**
 * Delay before retry `failures` (1-based): exponential from `baseMs`, capped at `maxMs`,
 * with equal jitter (a value in [d/2, d]) so that agents cut off together do not all
 * come back in the same instant.
 */
export function backoffDelay(failures: number, baseMs: number, maxMs: number, random = Math.random): number {
  const d = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures, 1) - 1, 30));
  return Math.round(d / 2 + random() * (d / 2));
}
