import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiidem');
});
afterAll(async () => {
  await h.close();
});

const dst = (tid: string) => `/v1/tenants/${tid}/destinations`;
const body = { name: 'orders', url: 'https://example.test/hook' };

describe('Idempotency-Key', () => {
  it('returns the original status and body (secret included) for the same key and body, creating once', async () => {
    const t = await h.tenant();
    const headers = { 'idempotency-key': 'f2a4c2f0-6a0e-4c1e-9d3b-1c1d8f0e0001' };
    const first = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    const again = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await h.prisma.destination.count({ where: { tenantId: t.tenantId } })).toBe(1);
    // The stored response holds a secret shown once: it is sealed at rest.
    const { rows } = await h.db.pool.query('SELECT response_body::text AS b, extract(epoch FROM expires_at - created_at)::int AS ttl FROM idempotency_records WHERE tenant_id = $1', [t.tenantId]);
    expect(rows[0].b).not.toContain(first.body.signing_secret);
    expect(rows[0].ttl).toBe(24 * 3600);
  });

  it('answers 409 idempotency-conflict when the key is reused with a different body', async () => {
    const t = await h.tenant();
    const headers = { 'idempotency-key': 'key-conflict-1' };
    await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    const res = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body: { ...body, name: 'other' }, headers });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/idempotency-conflict', idempotency_key: 'key-conflict-1' });
    expect(await h.prisma.destination.count({ where: { tenantId: t.tenantId } })).toBe(1);
  });

  it('replays an error outcome too, and keeps keys apart per tenant', async () => {
    const t = await h.tenant();
    const u = await h.tenant();
    await h.call('POST', dst(t.tenantId), { key: t.apiKey, body });
    const headers = { 'idempotency-key': 'shared-key' };
    const dup = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    expect(dup.status).toBe(409);
    const dupAgain = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    expect(dupAgain.status).toBe(409);
    expect(dupAgain.body).toEqual(dup.body);
    expect((await h.call('POST', dst(u.tenantId), { key: u.apiKey, body, headers })).status).toBe(201);
  });

  it('runs again once the record has expired', async () => {
    const t = await h.tenant();
    const headers = { 'idempotency-key': 'expiring' };
    const first = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body: { ...body, name: 'a' }, headers });
    await h.db.pool.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE key = 'expiring'`);
    const second = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body: { ...body, name: 'b' }, headers });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    const { rows } = await h.db.pool.query(`SELECT count(*)::int AS n FROM idempotency_records WHERE key = 'expiring'`);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a malformed key', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe('Idempotency-Key');
  });
});
