import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  // Free: burst 3, refilled at 6 per minute (one token every 10 s), so a test never sees a refill.
  h = await startApi('apirate', { RATE_LIMITS: 'free=6/3,pro=600/20,business=600/20,enterprise=600/20' });
});
afterAll(async () => {
  await h.close();
});

describe('per-tenant rate limit', () => {
  it('allows the burst, then answers 429 with retry_after_seconds and Retry-After', async () => {
    const t = await h.tenant({ plan: 'free' });
    const path = `/v1/tenants/${t.tenantId}/ingesters`;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await h.call('GET', path, { key: t.apiKey })).status);
    expect(statuses).toEqual([200, 200, 200]);
    const limited = await h.call('GET', path, { key: t.apiKey });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ type: 'https://hookline.dev/errors/rate-limit-exceeded', status: 429 });
    expect(Number.isInteger(limited.body.retry_after_seconds)).toBe(true);
    expect(limited.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(limited.body.retry_after_seconds).toBeLessThanOrEqual(10);
    expect(limited.headers.get('retry-after')).toBe(String(limited.body.retry_after_seconds));
    expect(limited.body.instance).toBe(limited.headers.get('x-request-id'));
  });

  it('counts per tenant, with the limits of its plan', async () => {
    const a = await h.tenant({ plan: 'free' });
    const b = await h.tenant({ plan: 'free' });
    const pro = await h.tenant({ plan: 'pro' });
    for (let i = 0; i < 3; i++) await h.call('GET', `/v1/tenants/${a.tenantId}/ingesters`, { key: a.apiKey });
    expect((await h.call('GET', `/v1/tenants/${a.tenantId}/ingesters`, { key: a.apiKey })).status).toBe(429);
    expect((await h.call('GET', `/v1/tenants/${b.tenantId}/ingesters`, { key: b.apiKey })).status).toBe(200);
    const proStatuses: number[] = [];
    for (let i = 0; i < 10; i++) proStatuses.push((await h.call('GET', `/v1/tenants/${pro.tenantId}/ingesters`, { key: pro.apiKey })).status);
    expect(proStatuses.every((s) => s === 200)).toBe(true);
    expect((await h.call('GET', `/v1/tenants/${pro.tenantId}/ingesters`, { key: pro.apiKey })).headers.get('x-ratelimit-limit')).toBe('600');
  });

  it('is shared by every api replica (the bucket lives in Redis)', async () => {
    const t = await h.tenant({ plan: 'free' });
    const other = await h.replica();
    const path = `/v1/tenants/${t.tenantId}/ingesters`;
    const get = (base: string) => fetch(`${base}${path}`, { headers: { 'x-api-key': t.apiKey } }).then((r) => r.status);
    expect([await get(h.url), await get(other), await get(h.url)]).toEqual([200, 200, 200]);
    expect(await get(other)).toBe(429);
  });
});
