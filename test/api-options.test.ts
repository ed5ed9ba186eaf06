// OPTIONS on a known path is 204 with the Allow header its 405 carries, from the OpenAPI
// document alone: no credential, no body read, no CORS. Unknown paths stay 404.
// OPTIONS is not an operation of the document (a note in info.description), so these
// requests skip its conformance check.
import { startApi, type ApiHarness } from './api-harness';
import { startMcp } from './mcp-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiopts');
});
afterAll(async () => {
  await h.close();
});

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'];

async function options(path: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${h.url}${path}`, { method: 'OPTIONS', headers: { 'x-request-id': 'req-options', ...init.headers }, body: init.body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The document's paths, each with the Allow it should answer: its methods, HEAD with GET, OPTIONS. */
async function documented(): Promise<{ template: string; path: string; allow: string; listed: Set<string> }[]> {
  const doc = (await h.call('GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  return Object.entries(doc.paths).map(([template, ops]) => {
    // The MCP endpoint's GET and DELETE are documented only to say they are 405.
    const listed = new Set(Object.entries(ops).filter(([, op]) => Object.keys(op.responses).some((s) => !/^[45]/.test(s))).map(([m]) => m));
    const allow = [...METHODS, 'options'].filter((m) => listed.has(m) || (m === 'head' && listed.has('get')) || m === 'options').map((m) => m.toUpperCase()).join(', ');
    return { template, path: template.replace(/\{\w+\}/g, 'x1'), allow, listed };
  });
}

const CORS = ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-allow-credentials', 'access-control-max-age'];

describe('OPTIONS', () => {
  it('answers a known path with 204, Allow and the request id, without a credential or a body', async () => {
    const t = await h.tenant();
    for (const [path, allow] of [
      ['/auth/login', 'POST, OPTIONS'],
      ['/v1/openapi.json', 'GET, HEAD, OPTIONS'],
      [`/v1/tenants/${t.tenantId}/destinations`, 'GET, HEAD, POST, OPTIONS'],
      [`/v1/tenants/${t.tenantId}/destinations/dst_x`, 'GET, HEAD, PATCH, DELETE, OPTIONS'],
      [`/v1/tenants/${t.tenantId}/ingesters/ing_x/apply`, 'POST, OPTIONS'],
      ['/healthz', 'GET, HEAD, OPTIONS'],
      ['/v1/mcp', 'POST, OPTIONS'],
      ['/v1/mcp/evidence/rcp_x', 'GET, HEAD, OPTIONS'],
      [`/v1/tenants/${t.tenantId}/mcp-keys/key_x/tool-groups/retry`, 'PUT, DELETE, OPTIONS'],
      ['/v1/edge/clusters/cls_x/work', 'POST, OPTIONS'],
      // Any case and a trailing slash, as express matches them.
      ['/V1/OpenAPI.json/', 'GET, HEAD, OPTIONS'],
    ] as const) {
      const res = await options(path);
      expect({ path, status: res.status, allow: res.headers.get('allow'), requestId: res.headers.get('x-request-id'), body: res.text }).toEqual({ path, status: 204, allow, requestId: 'req-options', body: '' });
    }
    // A request id is minted when the caller sends none, as on every answer.
    const minted = await fetch(`${h.url}/v1/openapi.json`, { method: 'OPTIONS' });
    expect([minted.status, minted.headers.get('x-request-id')]).toEqual([204, expect.stringMatching(/\S/)]);
  });

  it('answers before reading the body: malformed JSON, another media type or an oversized body', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/destinations`;
    for (const [type, body] of [
      ['application/json', '{"name": '],
      ['text/plain', 'hello'],
      ['application/json', JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) })],
    ] as const) {
      const res = await options(path, { headers: { 'content-type': type, 'x-api-key': 'hk_not_a_key' }, body });
      expect({ type, size: body.length, status: res.status, allow: res.headers.get('allow'), body: res.text }).toEqual({ type, size: body.length, status: 204, allow: 'GET, HEAD, POST, OPTIONS', body: '' });
    }
  });

  it('serves no CORS, a browser preflight included', async () => {
    const res = await options('/v1/openapi.json', { headers: { origin: 'https://app.example.test', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-api-key' } });
    expect(res.status).toBe(204);
    expect(CORS.filter((name) => res.headers.has(name))).toEqual([]);
    const doc = (await h.call('GET', '/v1/openapi.json')).body as { info: { description: string } };
    expect(doc.info.description).toMatch(/OPTIONS .*204.*Allow/);
    expect(doc.info.description).toMatch(/No CORS is served/);
  });

  it('keeps 404 problem details for unknown paths', async () => {
    const t = await h.tenant();
    for (const path of ['/v1/nope', `/v1/tenants/${t.tenantId}/nothing`, `/v1/tenants/${t.tenantId}/ingesters/ing_x/apply/extra`, '/auth/login/extra']) {
      const res = await fetch(`${h.url}${path}`, { method: 'OPTIONS', headers: { 'x-request-id': 'req-options-404' } });
      const problem = (await res.json()) as { type: string; instance: string };
      expect({ path, status: res.status, media: res.headers.get('content-type'), allow: res.headers.get('allow'), type: problem.type, instance: problem.instance }).toEqual({
        path,
        status: 404,
        media: expect.stringMatching(/^application\/problem\+json/),
        allow: null,
        type: 'https://hookline.dev/errors/not-found',
        instance: 'req-options-404',
      });
    }
  });

  it('names, for every documented path, the methods of the document, and the same Allow as its 405', async () => {
    let checked = 0;
    for (const { template, path, allow, listed } of await documented()) {
      const res = await options(path);
      expect({ template, status: res.status, allow: res.headers.get('allow') }).toEqual({ template, status: 204, allow });
      const wrong = METHODS.find((m) => !listed.has(m) && !(m === 'head' && listed.has('get')));
      if (wrong) {
        const refused = await fetch(`${h.url}${path}`, { method: wrong.toUpperCase() });
        expect({ template, wrong, status: refused.status, allow: refused.headers.get('allow') }).toEqual({ template, wrong, status: 405, allow });
      }
      checked++;
    }
    expect(checked).toBeGreaterThan(60);
  });

  it('lists HEAD only where express serves it: HEAD answers as GET does, without a body', async () => {
    let checked = 0;
    for (const { template, path } of await documented()) {
      const answer = await options(path);
      expect({ template, status: answer.status }).toEqual({ template, status: 204 });
      if (!answer.headers.get('allow')!.split(', ').includes('HEAD')) {
        // The MCP endpoint, say: no GET served, so no HEAD.
        expect({ template, head: (await fetch(`${h.url}${path}`, { method: 'HEAD' })).status }).toEqual({ template, head: 405 });
        continue;
      }
      const get = await fetch(`${h.url}${path}`);
      await get.arrayBuffer();
      const head = await fetch(`${h.url}${path}`, { method: 'HEAD' });
      expect({ template, status: head.status, body: await head.text() }).toEqual({ template, status: get.status, body: '' });
      expect(head.status).not.toBe(405);
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('is answered the same by the MCP router on its own at the MCP endpoint (it keeps its own 405)', async () => {
    const m = await startMcp('apioptsmcp');
    try {
      const res = await fetch(`${m.url}/v1/mcp`, { method: 'OPTIONS' });
      expect([res.status, res.headers.get('allow'), await res.text()]).toEqual([204, 'POST, OPTIONS', '']);
      const refused = await m.http('GET', '/v1/mcp');
      expect([refused.status, refused.headers.get('allow'), refused.body.type]).toEqual([405, 'POST, OPTIONS', 'https://hookline.dev/errors/method-not-allowed']);
    } finally {
      await m.close();
    }
  });
});
