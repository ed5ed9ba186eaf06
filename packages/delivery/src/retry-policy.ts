import type { DestinationSettings } from './destination-settings';
import { isSuccess, type SendResult } from './send-result';

export interface BackoffPolicy {
  retryBaseMs: number;
  retryMaxMs: number;
  retryAfterMaxMs: number;
}

/** The new state of a delivery after one attempt. */
export type Decision = { status: 'delivered' } | { status: 'failed'; delayMs: number } | { status: 'exhausted' };

/** SPEC.md: a 4xx other than 429 is permanent. */
const DEFAULT_RETRIED_4XX: readonly number[] = [429];

/**
 * Network errors, timeouts, 3xx, 429 and 5xx are retried; other 4xx are permanent
 * (SPEC.md). A destination's `retry_on_status` replaces the retried 4xx set (an empty list:
 * no 4xx is retried, not even 429).
 */
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
 * Where a delivery's current round of attempts starts, from its row: `replay_count` and
 * `round_start_attempt` (migration 20261126000000_replay_round_start).
 */
export interface Round {
  replayCount: number;
  /**
   * `attempt_count` when the delivery was last replayed (the replay sets it). null: never
   * replayed since that migration (a new delivery, or one replayed before it).
   */
  roundStartAttempt: number | null;
}

/**
 * The number of attempts made before the current round. A replay starts a fresh round of
 * `maxAttempts` attempts (SPEC.md: 5 attempts, exponential backoff, per delivery): counted
 * from the attempt_count the replay found, however many attempts the earlier rounds used
 * (one, when delivered at once or refused by a permanent 4xx; more after a retry). Attempt
 * numbers keep counting up across rounds, so the history stays unique per delivery.
 *
 * A row with no recorded start (round_start_attempt NULL) keeps the formula used before the
 * column existed, `maxAttempts × replay_count` (0 for a delivery never replayed), so that
 * a delivery replayed before the deploy finishes its round as it would have.
 *
 * Retry (POST …/events/{eid}/retry) is not a new round: it makes a failed or exhausted
 * delivery pending again and leaves round_start_attempt as it is, so the delivery gets the
 * attempts left in its round (one exhausted by a permanent 4xx early in its round gets the
 * rest of it), and one whose round is used up gets exactly one more attempt (its failure
 * exhausts it again). A fresh round is what replay is for.
 */
export function roundStart(settings: DestinationSettings, round: Round): number {
  return round.roundStartAttempt ?? settings.maxAttempts * round.replayCount;
}

/**
 * The outcome of attempt `attemptNumber` (attempt numbers count up over the delivery's
 * whole life): delivered; failed, to be retried after the backoff of its place in the round
 * (a `Retry-After` of the answer honoured when longer, bounded by retryAfterMaxMs); or
 * exhausted (the DLQ) when it is not retryable or was the round's last.
 */
export function decide(settings: DestinationSettings, policy: BackoffPolicy, r: SendResult, attemptNumber: number, round: Round, now = Date.now()): Decision {
  if (isSuccess(r)) return { status: 'delivered' };
  if (!isRetryable(settings, r)) return { status: 'exhausted' };
  const inRound = attemptNumber - roundStart(settings, round);
  // Written so that a count that is not a number (a row read without its columns) ends the
  // round rather than retrying for ever.
  if (!(inRound < settings.maxAttempts)) return { status: 'exhausted' };
  // At least 1: a legacy row's start can lie past the attempts made (its earlier rounds used fewer).
  let delayMs = backoffMs(settings, policy, Math.max(1, inRound));
  // Any retryable answer may say when to come back (SPEC.md: a Retry-After value is honoured when present).
  const ra = parseRetryAfter(r.responseHeaders?.['retry-after'], now);
  if (ra !== null) delayMs = Math.max(delayMs, Math.min(ra, policy.retryAfterMaxMs));
  return { status: 'failed', delayMs };
}
