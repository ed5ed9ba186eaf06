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
    expect(dupAgain.headers.get('idempotent-replayed')).toBe('true');
    // The same problem, naming this response's request (its X-Request-Id), not the first one's.
    expect(dup.body.instance).toBe(dup.headers.get('x-request-id'));
    expect(dupAgain.body.instance).toBe(dupAgain.headers.get('x-request-id'));
    expect(dupAgain.body.instance).not.toBe(dup.body.instance);
    expect({ ...dupAgain.body, instance: dup.body.instance }).toEqual(dup.body);
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

  it("keeps keys apart per credential: another key's identical request runs on its own, never answered with the first one's secret", async () => {
    const t = await h.tenant();
    const second = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: { name: 'second', scopes: ['read:destinations', 'write:destinations', 'read:api-keys', 'write:api-keys'] } });
    expect(second.status).toBe(201);
    const headers = { 'idempotency-key': 'per-credential-1' };
    const first = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    // Run on its own, the second key's create meets the first's destination: the name is taken.
    const other = await h.call('POST', dst(t.tenantId), { key: second.body.key, body, headers });
    expect([first.status, other.status, other.body.type, other.body.signing_secret, other.headers.get('idempotent-replayed')]).toEqual([
      201, 409, 'https://hookline.dev/errors/conflict', undefined, null,
    ]);
    expect(JSON.stringify(other.body)).not.toContain(first.body.signing_secret);
    expect(await h.prisma.destination.count({ where: { tenantId: t.tenantId } })).toBe(1);
    // Each credential's repeat still replays its own answer.
    const firstAgain = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers });
    const otherAgain = await h.call('POST', dst(t.tenantId), { key: second.body.key, body, headers });
    expect([firstAgain.body, firstAgain.headers.get('idempotent-replayed')]).toEqual([first.body, 'true']);
    // (A replayed problem names this response's request: instance is its X-Request-Id.)
    expect([otherAgain.body, otherAgain.headers.get('idempotent-replayed')]).toEqual([{ ...other.body, instance: otherAgain.headers.get('x-request-id') }, 'true']);

    // A create that both may make: each gets a key of its own, not the other's.
    const keyHeaders = { 'idempotency-key': 'per-credential-2' };
    const keyBody = { name: 'child', scopes: ['read:destinations'] };
    const mine = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: keyBody, headers: keyHeaders });
    const theirs = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: second.body.key, body: keyBody, headers: keyHeaders });
    expect([mine.status, theirs.status, theirs.headers.get('idempotent-replayed')]).toEqual([201, 201, null]);
    expect([theirs.body.id === mine.body.id, theirs.body.key === mine.body.key]).toEqual([false, false]);
  });

  it("a less privileged credential sending a more privileged one's key create under its Idempotency-Key is checked, not handed that key", async () => {
    const t = await h.tenant();
    const weak = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: { name: 'weak', scopes: ['read:api-keys', 'write:api-keys'] } });
    const headers = { 'idempotency-key': 'powerful-key-create' };
    const powerful = { name: 'ops', scopes: ['read:api-keys', 'write:api-keys', 'write:destinations', 'read:audit'] };
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: powerful, headers });
    expect(made.status).toBe(201);
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: weak.body.key, body: powerful, headers });
    expect([res.status, res.body.type, res.body.required_scope, res.body.key, res.headers.get('idempotent-replayed')]).toEqual([
      403, 'https://hookline.dev/errors/insufficient-scope', 'write:destinations', undefined, null,
    ]);
    const { rows } = await h.db.pool.query(`SELECT name FROM api_keys WHERE tenant_id = $1 AND kind = 'api' ORDER BY id`, [t.tenantId]);
    expect(rows.map((r) => r.name)).toEqual(['test', 'weak', 'ops']);
  });

  it('refuses a malformed key', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', dst(t.tenantId), { key: t.apiKey, body, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe('Idempotency-Key');
  });
});
