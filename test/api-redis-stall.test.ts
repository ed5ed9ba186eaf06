// A stalled Redis (connection open, no replies) must not hang the control API: the rate
// limiter's command gives up after REDIS_COMMAND_TIMEOUT_MS and the limiter fails open, as
// it does with Redis down; readiness reports Redis not ready. Through a loopback proxy in
// front of the test Redis.
import { startRedisProxy, waitFor, type RedisProxy } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';

jest.setTimeout(60_000);

let proxy: RedisProxy;
let h: ApiHarness;
beforeAll(async () => {
  proxy = await startRedisProxy();
  h = await startApi('apistall', { REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: '2500', RATE_LIMITS: 'free=600/100,pro=600/100,business=600/100,enterprise=600/100' }, { quiet: true });
});
afterAll(async () => {
  proxy?.resume();
  await h?.close();
  await proxy?.close();
});

test('with Redis stalled the control API still answers: the rate limiter fails open, and holds again once Redis answers', async () => {
  const t = await h.tenant({ plan: 'free' });
  const path = `/v1/tenants/${t.tenantId}/ingesters`;
  const before = await h.call('GET', path, { key: t.apiKey });
  expect([before.status, before.headers.get('x-ratelimit-limit')]).toEqual([200, '600']);

  proxy.stall();
  try {
    const answers: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.call('GET', path, { key: t.apiKey });
      answers.push([res.status, res.headers.get('x-ratelimit-limit')]);
    }
    // Served, without X-RateLimit-* headers: no bucket was read (as with Redis down).
    expect(answers).toEqual(Array(3).fill([200, null]));
    const made = await h.call('POST', path, { key: t.apiKey, body: { name: 'during-stall', provider: 'generic' } });
    expect(made.status).toBe(201);
  } finally {
    proxy.resume();
  }
  // The stalled connection was dropped (socket timeout); once it is made again the bucket holds.
  const after = await waitFor(async () => {
    const res = await h.call('GET', path, { key: t.apiKey });
    return res.headers.get('x-ratelimit-limit') !== null && res;
  }, { timeoutMs: 20_000, what: 'rate-limit headers after the stall' });
  expect([after.status, after.headers.get('x-ratelimit-limit')]).toEqual([200, '600']);
});

const ready = () => waitFor(async () => (await fetch(`${h.url}/readyz`)).status === 200, { timeoutMs: 20_000, what: 'readiness' });

test('with Redis stalled readiness answers, reporting Redis not ready', async () => {
  await ready();
  proxy.stall();
  try {
    const res = await fetch(`${h.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'not_ready', checks: { database: true, redis: false } });
  } finally {
    proxy.resume();
  }
  expect(await ready()).toBe(true);
});
