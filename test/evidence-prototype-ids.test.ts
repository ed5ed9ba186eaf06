// Evidence ids named after Object.prototype members are unknown ids (404), not a 500.
import { evidenceFor } from '@hookline/evidence';
import { startApi, type ApiHarness } from './api-harness';

const NAMED_AFTER_OBJECT = ['constructor_1', 'toString_1', 'hasOwnProperty_0123456789', 'valueOf_abc', '__proto__', '__proto___1', '__defineGetter___1'];

let h: ApiHarness;

beforeAll(async () => {
  h = await startApi('evprotoids', {}, { quiet: true });
});

afterAll(async () => {
  await h.close();
});

test('evidenceFor finds nothing for an id whose prefix is a member of Object.prototype', async () => {
  const t = await h.tenant();
  for (const id of NAMED_AFTER_OBJECT) expect({ id, found: await evidenceFor(h.db.pool, t.tenantId, id) }).toEqual({ id, found: null });
});

test('GET /v1/mcp/evidence/{id} answers such ids 404 as problem details, as any unknown id', async () => {
  const t = await h.tenant();
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'reader', scopes: ['mcp:read:evidence'] } });
  const headers = { 'x-mcp-api-key': made.body.key };
  const unknown = await h.call('GET', '/v1/mcp/evidence/rcp_00000000000000000000000000', { headers });
  expect(unknown.status).toBe(404);
  for (const id of [...NAMED_AFTER_OBJECT, 'rcp_NOT-AN-ID', 'xyz_0123456789']) {
    const res = await h.call('GET', `/v1/mcp/evidence/${encodeURIComponent(id)}`, { headers });
    expect({ id, status: res.status, type: res.body.type }).toEqual({ id, status: 404, type: unknown.body.type });
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  }
  // The flat route too (a receipt id is looked up as given).
  const flat = await h.call('GET', '/v1/evidence/receipts/constructor_1', { key: t.apiKey });
  expect(flat.status).toBe(404);
});

test('GET /v1/mcp/logs/{id} treats such ids as any other unknown resource (404), not a 500', async () => {
  const t = await h.tenant();
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'logs', scopes: ['mcp:read:logs'] } });
  const headers = { 'x-mcp-api-key': made.body.key };
  for (const id of ['constructor_x', 'toString_1', '__proto___1']) {
    const res = await h.call('GET', `/v1/mcp/logs/${encodeURIComponent(id)}`, { headers });
    expect({ id, status: res.status, type: res.body.type }).toEqual({ id, status: 404, type: expect.stringMatching(/not-found$/) });
  }
});
