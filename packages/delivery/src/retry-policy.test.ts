import { destinationSettings, type DeliveryDefaults } from './destination-settings';
import { backoffMs, decide, parseRetryAfter } from './retry-policy';
import type { SendResult } from './send-result';

const defaults: DeliveryDefaults = { timeoutMs: 15000, maxAttempts: 5, maxConcurrency: 10, retryScheduleMs: null };
const policy = { retryBaseMs: 1000, retryMaxMs: 3_600_000, retryAfterMaxMs: 60_000 };
const plain = destinationSettings('POST', {}, defaults);

function result(statusCode: number | null, extra: Partial<SendResult> = {}): SendResult {
  return { statusCode, errorKind: statusCode === null ? 'reset' : null, error: null, responseBody: null, responseHeaders: null, startedAt: new Date(), durationMs: 1, ...extra };
}

test('2xx delivers; 5xx, 408, 429, 3xx and network errors retry; other 4xx are permanent', () => {
  expect(decide(plain, policy, result(204), 1, 0)).toEqual({ status: 'delivered' });
  for (const s of [500, 502, 503, 408, 429, 301]) expect(decide(plain, policy, result(s), 1, 0).status).toBe('failed');
  expect(decide(plain, policy, result(null), 1, 0).status).toBe('failed');
  for (const s of [400, 401, 403, 404, 410, 422]) expect(decide(plain, policy, result(s), 1, 0)).toEqual({ status: 'exhausted' });
  expect(decide(plain, policy, result(null, { errorKind: 'ssrf_blocked' }), 1, 0)).toEqual({ status: 'exhausted' });
});

test('retry_on_status replaces the retried 4xx set', () => {
  const s = destinationSettings('POST', { retry_on_status: [404, 409] }, defaults);
  expect(decide(s, policy, result(404), 1, 0).status).toBe('failed');
  expect(decide(s, policy, result(429), 1, 0).status).toBe('exhausted');
  expect(decide(s, policy, result(500), 1, 0).status).toBe('failed');
});

test('attempts run out at max_attempts; each replay grants a fresh set', () => {
  expect(decide(plain, policy, result(500), 4, 0).status).toBe('failed');
  expect(decide(plain, policy, result(500), 5, 0)).toEqual({ status: 'exhausted' });
  expect(decide(plain, policy, result(500), 6, 1).status).toBe('failed');
  expect(decide(plain, policy, result(500), 10, 1)).toEqual({ status: 'exhausted' });
  const three = destinationSettings('POST', { max_attempts: 3 }, defaults);
  expect(decide(three, policy, result(500), 3, 0)).toEqual({ status: 'exhausted' });
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
  expect(decide(s, policy, result(429, { responseHeaders: { 'retry-after': '2' } }), 1, 0, now)).toEqual({ status: 'failed', delayMs: 2000 });
  expect(decide(s, policy, result(503, { responseHeaders: { 'retry-after': '86400' } }), 1, 0, now)).toEqual({ status: 'failed', delayMs: 60_000 });
  // Only 429 and 503 carry a meaningful Retry-After here.
  expect(decide(s, policy, result(500, { responseHeaders: { 'retry-after': '2' } }), 1, 0, now)).toEqual({ status: 'failed', delayMs: 50 });
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
