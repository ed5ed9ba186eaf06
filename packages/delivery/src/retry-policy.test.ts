import { destinationSettings, type DeliveryDefaults, type DestinationSettings } from './destination-settings';
import { backoffMs, decide, parseRetryAfter, type BackoffPolicy, type Round } from './retry-policy';
import type { SendResult } from './send-result';

const defaults: DeliveryDefaults = { timeoutMs: 15000, maxAttempts: 5, maxConcurrency: 10, retryScheduleMs: null };
const policy = { retryBaseMs: 1000, retryMaxMs: 3_600_000, retryAfterMaxMs: 60_000 };
const plain = destinationSettings('POST', {}, defaults);
/** A delivery never replayed. */
const first: Round = { replayCount: 0, roundStartAttempt: null };
/** Replayed `n` times, before round_start_attempt was recorded. */
const legacy = (n: number): Round => ({ replayCount: n, roundStartAttempt: null });

function result(statusCode: number | null, extra: Partial<SendResult> = {}): SendResult {
  return { statusCode, errorKind: statusCode === null ? 'reset' : null, error: null, responseBody: null, responseHeaders: null, startedAt: new Date(), durationMs: 1, ...extra };
}

test('2xx delivers; 5xx, 429, 3xx and network errors retry; other 4xx are permanent', () => {
  expect(decide(plain, policy, result(204), 1, first)).toEqual({ status: 'delivered' });
  for (const s of [500, 502, 503, 429, 301]) expect(decide(plain, policy, result(s), 1, first).status).toBe('failed');
  expect(decide(plain, policy, result(null), 1, first).status).toBe('failed');
  for (const s of [400, 401, 403, 404, 410, 422]) expect(decide(plain, policy, result(s), 1, first)).toEqual({ status: 'exhausted' });
  expect(decide(plain, policy, result(null, { errorKind: 'ssrf_blocked' }), 1, first)).toEqual({ status: 'exhausted' });
});

test('retry_on_status replaces the retried 4xx set', () => {
  const s = destinationSettings('POST', { retry_on_status: [404, 409] }, defaults);
  expect(decide(s, policy, result(404), 1, first).status).toBe('failed');
  expect(decide(s, policy, result(429), 1, first).status).toBe('exhausted');
  expect(decide(s, policy, result(500), 1, first).status).toBe('failed');
});

test('SPEC.md: a 408 is permanent by default, as every 4xx but 429', () => {
  expect(plain.retryOnStatus).toBeNull();
  expect(decide(plain, policy, result(408), 1, first)).toEqual({ status: 'exhausted' });
  expect(decide(plain, policy, result(429), 1, first).status).toBe('failed');
  // A destination can still ask for it.
  expect(decide(destinationSettings('POST', { retry_on_status: [408, 429] }, defaults), policy, result(408), 1, first).status).toBe('failed');
});

test('an explicit empty retry_on_status retries no 4xx, not even 429; absent or malformed keeps the default', () => {
  const none = destinationSettings('POST', { retry_on_status: [] }, defaults);
  expect(none.retryOnStatus).toEqual([]);
  for (const s of [408, 429, 404]) expect(decide(none, policy, result(s), 1, first)).toEqual({ status: 'exhausted' });
  for (const s of [500, 503, 301]) expect(decide(none, policy, result(s), 1, first).status).toBe('failed');
  expect(decide(none, policy, result(null), 1, first).status).toBe('failed');
  for (const config of [{}, { retry_on_status: null }, { retry_on_status: [200] }, { retry_on_status: 'none' }]) {
    const s = destinationSettings('POST', config, defaults);
    expect(s.retryOnStatus).toBeNull();
    expect(decide(s, policy, result(429), 1, first).status).toBe('failed');
  }
});

test('attempts run out at max_attempts', () => {
  expect(decide(plain, policy, result(500), 4, first).status).toBe('failed');
  expect(decide(plain, policy, result(500), 5, first)).toEqual({ status: 'exhausted' });
  const three = destinationSettings('POST', { max_attempts: 3 }, defaults);
  expect(decide(three, policy, result(500), 3, first)).toEqual({ status: 'exhausted' });
});

/** The attempts of one round against a receiver that always fails: the delay after each, then how it ended. */
function playRound(settings: DestinationSettings, round: Round, p: BackoffPolicy = policy): { delays: number[]; last: number } {
  const delays: number[] = [];
  for (let n = (round.roundStartAttempt ?? 0) + 1; n < 1000; n++) {
    const d = decide(settings, p, result(500), n, round);
    if (d.status !== 'failed') return { delays, last: n };
    delays.push(d.delayMs);
  }
  throw new Error('the round never ends');
}

describe('a replay is a fresh round of max_attempts attempts, with its own growing backoff', () => {
  const noJitter = () => jest.spyOn(Math, 'random').mockReturnValue(1);
  afterEach(() => jest.restoreAllMocks());

  test('delivered (or refused by a permanent 4xx) at attempt 1, then replayed: attempts 2..6', () => {
    noJitter();
    const round: Round = { replayCount: 1, roundStartAttempt: 1 };
    expect(playRound(plain, round)).toEqual({ delays: [1000, 2000, 4000, 8000], last: 6 });
    expect(decide(plain, policy, result(500), 6, round)).toEqual({ status: 'exhausted' });
    // The same with an explicit schedule: the round walks it from its first value.
    const scheduled = destinationSettings('POST', { retry_schedule_ms: [50, 100, 150, 200] }, defaults);
    expect(playRound(scheduled, round)).toEqual({ delays: [50, 100, 150, 200], last: 6 });
  });

  test('exhausted, retried once, then replayed: five attempts again', () => {
    noJitter();
    // Round 0 used attempts 1..5, the retry attempt 6; the replay found attempt_count 6.
    expect(playRound(plain, { replayCount: 1, roundStartAttempt: 6 })).toEqual({ delays: [1000, 2000, 4000, 8000], last: 11 });
    // A second replay after a round delivered at its third attempt (attempt 8).
    expect(playRound(plain, { replayCount: 2, roundStartAttempt: 8 })).toEqual({ delays: [1000, 2000, 4000, 8000], last: 13 });
  });

  test('max_attempts of the destination sizes every round', () => {
    noJitter();
    const three = destinationSettings('POST', { max_attempts: 3 }, defaults);
    expect(playRound(three, { replayCount: 1, roundStartAttempt: 1 })).toEqual({ delays: [1000, 2000], last: 4 });
  });

  test('a retry continues the round: the attempts left in it, or exactly one when it is used up', () => {
    // Round started at attempt 1 (replayed), used up at attempt 6, retried: attempt 7 is its last.
    expect(decide(plain, policy, result(500), 7, { replayCount: 1, roundStartAttempt: 1 })).toEqual({ status: 'exhausted' });
    // Refused by a 400 at attempt 1, retried: the rest of the round (attempts 2..5).
    for (const n of [2, 3, 4]) expect(decide(plain, policy, result(500), n, first).status).toBe('failed');
    expect(decide(plain, policy, result(500), 5, first)).toEqual({ status: 'exhausted' });
  });

  test('a row replayed before round_start_attempt existed (NULL) keeps the old formula, max_attempts × replay_count', () => {
    noJitter();
    // Exhausted at attempt 5, replayed the old way: attempts 6..10, as before.
    expect(decide(plain, policy, result(500), 6, legacy(1))).toEqual({ status: 'failed', delayMs: 1000 });
    expect(decide(plain, policy, result(500), 9, legacy(1))).toEqual({ status: 'failed', delayMs: 8000 });
    expect(decide(plain, policy, result(500), 10, legacy(1))).toEqual({ status: 'exhausted' });
    // Delivered at attempt 1, replayed the old way: the round still ends at attempt 10, the
    // delays held at the first step until attempt 5 (what such rows did before).
    const delays: number[] = [];
    for (let n = 2; n <= 9; n++) delays.push((decide(plain, policy, result(500), n, legacy(1)) as { delayMs: number }).delayMs);
    expect(delays).toEqual([1000, 1000, 1000, 1000, 1000, 2000, 4000, 8000]);
    expect(decide(plain, policy, result(500), 10, legacy(1))).toEqual({ status: 'exhausted' });
    expect(decide(plain, policy, result(500), 15, legacy(2))).toEqual({ status: 'exhausted' });
    expect(decide(plain, policy, result(500), 14, legacy(2)).status).toBe('failed');
  });
});

test('a round that cannot be placed (counts that are not numbers) ends rather than retrying for ever', () => {
  expect(decide(plain, policy, result(500), 1, { replayCount: NaN, roundStartAttempt: null })).toEqual({ status: 'exhausted' });
  expect(decide(plain, policy, result(500), NaN, first)).toEqual({ status: 'exhausted' });
});

test('exponential backoff doubles, is capped, and jitters within [d/2, d]', () => {
  expect(backoffMs(plain, policy, 1, () => 0)).toBe(500);
  expect(backoffMs(plain, policy, 1, () => 1)).toBe(1000);
  expect(backoffMs(plain, policy, 4, () => 1)).toBe(8000);
  expect(backoffMs(plain, { ...policy, retryMaxMs: 5000 }, 10, () => 1)).toBe(5000);
  const seen = new Set(Array.from({ length: 50 }, () => backoffMs(plain, policy, 3)));
  for (const d of seen) expect(d >= 2000 && d <= 4000).toBe(true);
  expect(seen.size).toBeGreaterThan(1);
});

test('an explicit schedule is used as given and its last value repeats', () => {
  const s = destinationSettings('POST', { retry_schedule_ms: [50, 100, 150] }, defaults);
  expect([1, 2, 3, 4, 9].map((n) => backoffMs(s, policy, n))).toEqual([50, 100, 150, 150, 150]);
  const viaDefaults = destinationSettings('POST', {}, { ...defaults, retryScheduleMs: [7, 8] });
  expect(backoffMs(viaDefaults, policy, 1)).toBe(7);
});

test('Retry-After on 429/503 is honoured in seconds or as a date, and bounded', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  expect(parseRetryAfter('3', now)).toBe(3000);
  expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000);
  expect(parseRetryAfter('soon', now)).toBeNull();
  const s = destinationSettings('POST', { retry_schedule_ms: [50] }, defaults);
  expect(decide(s, policy, result(429, { responseHeaders: { 'retry-after': '2' } }), 1, first, now)).toEqual({ status: 'failed', delayMs: 2000 });
  expect(decide(s, policy, result(503, { responseHeaders: { 'retry-after': '86400' } }), 1, first, now)).toEqual({ status: 'failed', delayMs: 60_000 });
  // Shorter than the backoff: the backoff stands.
  expect(decide(destinationSettings('POST', { retry_schedule_ms: [5000] }, defaults), policy, result(429, { responseHeaders: { 'retry-after': '1' } }), 1, first, now)).toEqual({ status: 'failed', delayMs: 5000 });
});

test('Retry-After is honoured on every retryable answer that carries it (SPEC.md: 500 too), bounded as on 429', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const s = destinationSettings('POST', { retry_schedule_ms: [50] }, defaults);
  const ra = (status: number, value: string) => result(status, { errorKind: 'http_error', responseHeaders: { 'retry-after': value } });
  expect(decide(s, policy, ra(500, '2'), 1, first, now)).toEqual({ status: 'failed', delayMs: 2000 });
  expect(decide(s, policy, ra(500, 'Thu, 01 Jan 2026 00:00:07 GMT'), 1, first, now)).toEqual({ status: 'failed', delayMs: 7000 });
  expect(decide(s, policy, ra(500, '86400'), 1, first, now)).toEqual({ status: 'failed', delayMs: 60_000 });
  expect(decide(s, policy, ra(502, '3'), 1, first, now)).toEqual({ status: 'failed', delayMs: 3000 });
  // A 4xx the destination retries.
  expect(decide(destinationSettings('POST', { retry_schedule_ms: [50], retry_on_status: [409] }, defaults), policy, ra(409, '4'), 1, first, now)).toEqual({ status: 'failed', delayMs: 4000 });
  // Unreadable: the backoff. Not retryable, or the round's last attempt: no delay to give.
  expect(decide(s, policy, ra(500, 'soon'), 1, first, now)).toEqual({ status: 'failed', delayMs: 50 });
  expect(decide(s, policy, ra(400, '2'), 1, first, now)).toEqual({ status: 'exhausted' });
  expect(decide(s, policy, ra(500, '2'), 5, first, now)).toEqual({ status: 'exhausted' });
});

test('destination settings ignore values of the wrong shape and reserved headers', () => {
  const s = destinationSettings('delete', { timeout_ms: -1, max_concurrency: 'x', headers: { 'X-Team': 'a', 'Webhook-Signature': 'forged', Host: 'evil', 'X-Bad': 'a\r\nb' }, rate_limit_per_second: 5 }, defaults);
  expect(s.method).toBe('POST');
  expect(s.timeoutMs).toBe(15000);
  expect(s.maxConcurrency).toBe(10);
  expect(s.headers).toEqual({ 'x-team': 'a' });
  expect(s.rateLimitPerSecond).toBe(5);
  expect(destinationSettings('PUT', { mtls: { cert: 'C', key_sealed: 'K' } }, defaults)).toMatchObject({ method: 'PUT', mtls: { cert: 'C', keySealed: 'K', ca: null } });
});
