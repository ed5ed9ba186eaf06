import type { DestinationSettings } from './destination-settings';
import { isSuccess, type SendResult } from './send-result';

export interface BackoffPolicy {
  retryBaseMs: number;
  retryMaxMs: number;
  retryAfterMaxMs: number;
}

/** The new state of a delivery after one attempt. */
export type Decision = { status: 'delivered' } | { status: 'failed'; delayMs: number } | { status: 'exhausted' };

const DEFAULT_RETRIED_4XX = [408, 429];

/** Network errors, timeouts, 3xx, 408, 429 and 5xx are retried; other 4xx are permanent (SPEC.md). */
export function isRetryable(settings: DestinationSettings, r: SendResult): boolean {
  if (r.errorKind === 'ssrf_blocked' || r.errorKind === 'payload_missing') return false;
  const s = r.statusCode;
  if (s === null) return true;
  if (s >= 400 && s < 500) return (settings.retryOnStatus ?? DEFAULT_RETRIED_4XX).includes(s);
  return true;
}

/**
 * Delay before attempt `failed + 1`, after `failed` failed attempts. An explicit schedule is
 * used as given (its last value repeats); otherwise exponential from the base, capped,
 * with "equal jitter" (half fixed, half random) so retries of a burst spread out.
 */
export function backoffMs(settings: DestinationSettings, policy: BackoffPolicy, failed: number, random = Math.random): number {
  const schedule = settings.retryScheduleMs;
  if (schedule && schedule.length > 0) return schedule[Math.min(failed, schedule.length) - 1] ?? 0;
  const d = Math.min(policy.retryMaxMs, policy.retryBaseMs * 2 ** Math.min(failed - 1, 40));
  return Math.round(d / 2 + random() * (d / 2));
}

/** `Retry-After` as delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * Every replay grants a fresh `maxAttempts` (attempt numbers keep growing across replays,
 * so the history stays unique per delivery).
 */
export function decide(settings: DestinationSettings, policy: BackoffPolicy, r: SendResult, attemptNumber: number, replayCount: number, now = Date.now()): Decision {
  if (isSuccess(r)) return { status: 'delivered' };
  if (!isRetryable(settings, r)) return { status: 'exhausted' };
  const allowed = settings.maxAttempts * (replayCount + 1);
  if (attemptNumber >= allowed) return { status: 'exhausted' };
  const failedInRound = attemptNumber - settings.maxAttempts * replayCount;
  let delayMs = backoffMs(settings, policy, Math.max(1, failedInRound));
  if (r.statusCode === 429 || r.statusCode === 503) {
    const ra = parseRetryAfter(r.responseHeaders?.['retry-after'], now);
    if (ra !== null) delayMs = Math.max(delayMs, Math.min(ra, policy.retryAfterMaxMs));
  }
  return { status: 'failed', delayMs };
}
