// A route that takes a JSON body answers a body of another media type with 415, not a 400
// about a missing body; no body at all is judged by the route's schema as before.
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apimedia');
});
afterAll(async () => {
  await h.close();
});

const JSON_TEXT = '{"name":"in","provider":"generic"}';

function expect415(res: ApiResponse): void {
  expect(res.status).toBe(415);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/unsupported-media-type', title: 'Unsupported Media Type', status: 415 });
  expect(res.body.instance).toBe(res.headers.get('x-request-id'));
  expect(res.body.detail).toMatch(/application\/json/);
}

async function ingesterCount(tenantId: string): Promise<number> {
  const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM ingesters WHERE tenant_id = $1', [tenantId]);
  return rows[0].n;
}

describe('415 Unsupported Media Type', () => {
  it('refuses a JSON-looking body sent as text/plain, form data or no Content-Type, writing nothing', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/ingesters`;
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/jsonx']) {
      const res = await h.call('POST', path, { key: t.apiKey, rawBody: JSON_TEXT, headers: { 'content-type': type } });
      expect({ type, status: res.status }).toEqual({ type, status: 415 });
      expect415(res);
    }
    // fetch sends bytes without a Content-Type.
    const bare = await fetch(`${h.url}${path}`, { method: 'POST', headers: { 'x-api-key': t.apiKey }, body: new TextEncoder().encode(JSON_TEXT) });
    expect(bare.status).toBe(415);
    expect(await ingesterCount(t.tenantId)).toBe(0);
    // Idempotency-Key is not spent on a refused body.
    const keyed = await h.call('POST', path, { key: t.apiKey, rawBody: JSON_TEXT, headers: { 'content-type': 'text/plain', 'idempotency-key': 'media-1' } });
    expect(keyed.status).toBe(415);
    const ok = await h.call('POST', path, { key: t.apiKey, body: { name: 'in', provider: 'generic' }, headers: { 'idempotency-key': 'media-1' } });
    expect(ok.status).toBe(201);
  });

  it('applies to every kind of route with a body: update, flat, public login and the edge agent', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'https://example.test/' } });
    const text = { 'content-type': 'text/plain' };
    expect415(await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, rawBody: '{"name":"e"}', headers: text }));
    expect415(await h.call('POST', '/v1/replay', { key: t.apiKey, rawBody: '{}', headers: text }));
    expect415(await h.call('POST', '/auth/login', { rawBody: 'email=a%40example.test&password=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }));
    expect415(await h.call('POST', '/v1/edge/clusters/cls_x/work', { rawBody: '{}', headers: text }));
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey })).body.name).toBe('d');
  });

  it('authenticates first: without a credential the answer is 401', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { rawBody: JSON_TEXT, headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(401);
  });

  it('accepts application/json with parameters, and leaves bodiless requests as they were', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/ingesters`;
    const withCharset = await h.call('POST', path, { key: t.apiKey, rawBody: JSON_TEXT, headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(withCharset.status).toBe(201);
    // No body and no Content-Type: the schema decides (a required body is a 400, as before).
    const none = await h.call('POST', path, { key: t.apiKey });
    expect([none.status, none.body.type]).toEqual([400, 'https://hookline.dev/errors/validation-error']);
    // A declared type with nothing in it is no body either.
    const empty = await h.call('POST', path, { key: t.apiKey, rawBody: '', headers: { 'content-type': 'text/plain' } });
    expect(empty.status).toBe(400);
    // Routes that take no body still ignore what they are sent.
    const disable = await h.call('POST', `${path}/${withCharset.body.id}/disable`, { key: t.apiKey });
    expect(disable.status).toBe(200);
  });

  it('applies to the MCP REST routes with a body: a tool call and an MCP key, writing nothing', async () => {
    const t = await h.tenant();
    const text = { 'content-type': 'text/plain' };
    const keyPath = `/v1/tenants/${t.tenantId}/mcp-keys`;
    expect415(await h.call('POST', keyPath, { key: t.apiKey, rawBody: '{"name":"agent","scopes":["mcp:read:health"]}', headers: text }));
    expect((await h.call('GET', keyPath, { key: t.apiKey })).body).toEqual({ mcp_keys: [], next_cursor: null });
    const made = await h.call('POST', keyPath, { key: t.apiKey, body: { name: 'agent', scopes: ['mcp:read:health', 'mcp:read:planes'] } });
    expect(made.status).toBe(201);
    const mcp = { 'x-mcp-api-key': made.body.key as string };
    expect415(await h.call('POST', '/v1/mcp/tools/get_health', { rawBody: '{}', headers: { ...mcp, ...text } }));
    expect((await h.call('POST', '/v1/mcp/tools/get_health', { body: {}, headers: mcp })).status).toBe(200);
  });

  it('documents 415 on every operation with a JSON body', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> }; responses: Record<string, unknown> }>> };
    let bodies = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        // POST /v1/mcp answers its transport's errors (415 included) as problem details, documented there.
        if (!op.requestBody?.content['application/json']) continue;
        bodies++;
        expect({ op: `${method} ${path}`, has415: '415' in op.responses }).toEqual({ op: `${method} ${path}`, has415: true });
      }
    }
    expect(bodies).toBeGreaterThan(20);
  });
});
