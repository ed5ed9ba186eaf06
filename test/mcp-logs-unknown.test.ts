// GET /v1/mcp/logs/{id}: an id that names nothing of the tenant is 404 (SPEC.md: a resource
// missing or not visible to the tenant), not an empty list; the tenant's own resources,
// deleted ones its audit log names included, get their entries.
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('mcplogs404', {}, { quiet: true });
});
afterAll(async () => {
  await h.close();
});

async function logsReader(t: { tenantId: string; apiKey: string }): Promise<(id: string) => Promise<{ status: number; type?: string; entries?: { message: string }[] }>> {
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'logs', scopes: ['mcp:read:logs'] } });
  const headers = { 'x-mcp-api-key': made.body.key };
  return async (id) => {
    const res = await h.call('GET', `/v1/mcp/logs/${encodeURIComponent(id)}`, { headers });
    return { status: res.status, type: res.body.type, entries: res.body.entries };
  };
}

test("unknown ids, and another tenant's, are 404; the tenant's own resources answer their audit entries", async () => {
  const t = await h.tenant();
  const other = await h.tenant();
  const logs = await logsReader(t);
  const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'https://example.com/h' } });
  const theirs = await h.call('POST', `/v1/tenants/${other.tenantId}/destinations`, { key: other.apiKey, body: { name: 'd', url: 'https://example.com/h' } });
  expect([dst.status, theirs.status]).toEqual([201, 201]);

  const mine = await logs(dst.body.id);
  expect(mine.status).toBe(200);
  expect(mine.entries!.map((e) => e.message)).toEqual([expect.stringMatching(/^destinations\.create by /)]);
  for (const id of [theirs.body.id, 'dst_00000000000000000000000000', 'flw_00000000000000000000000000', 'nothing', other.tenantId]) {
    expect({ id, ...(await logs(id)) }).toEqual({ id, status: 404, type: expect.stringMatching(/not-found$/), entries: undefined });
  }
  expect((await logs(t.tenantId)).status).toBe(200);
});

test('a saved payload deleted since (its row gone) still answers the audit entries that name it', async () => {
  const t = await h.tenant();
  const logs = await logsReader(t);
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/saved-payloads`, { key: t.apiKey, body: { name: 'p', body: '{}' } });
  expect(made.status).toBe(201);
  expect((await h.call('DELETE', `/v1/tenants/${t.tenantId}/saved-payloads/${made.body.id}`, { key: t.apiKey })).status).toBe(204);
  const res = await logs(made.body.id);
  expect(res.status).toBe(200);
  expect(res.entries!.length).toBeGreaterThanOrEqual(2);
});
