// A known path called with a method it does not serve is 405 with Allow (OPTIONS included: it is
// 204 there, api-options.test.ts); unknown paths stay 404.
// These requests are not in the OpenAPI document by definition, so they skip its conformance check.
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('api405');
});
afterAll(async () => {
  await h.close();
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const call = (method: string, path: string): Promise<ApiResponse> => h.call(method, path, { unchecked: true, headers: { 'x-request-id': `req-405-${method}` } });

function expect405(res: ApiResponse, allow: string): void {
  expect({ status: res.status, allow: res.headers.get('allow') }).toEqual({ status: 405, allow });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/method-not-allowed', title: 'Method Not Allowed', status: 405 });
  expect(res.body.instance).toBe(res.headers.get('x-request-id'));
  expect(typeof res.body.detail).toBe('string');
}

describe('405 Method Not Allowed', () => {
  it('answers a known path with the wrong method with 405, Allow and problem details, before any credential', async () => {
    const t = await h.tenant();
    expect405(await call('GET', '/auth/login'), 'POST, OPTIONS');
    expect405(await call('DELETE', '/v1/openapi.json'), 'GET, HEAD, OPTIONS');
    expect405(await call('POST', `/v1/tenants/${t.tenantId}/ingesters/ing_x`), 'GET, HEAD, PUT, DELETE, OPTIONS');
    expect405(await call('PUT', `/v1/tenants/${t.tenantId}/destinations`), 'GET, HEAD, POST, OPTIONS');
    expect405(await call('GET', `/v1/tenants/${t.tenantId}/ingesters/ing_x/apply`), 'POST, OPTIONS');
    // The probes and the plugins' paths too.
    expect405(await call('POST', '/healthz'), 'GET, HEAD, OPTIONS');
    expect405(await call('PATCH', '/v1/mcp/health'), 'GET, HEAD, OPTIONS');
    expect405(await call('GET', '/v1/edge/clusters/cls_x/work'), 'POST, OPTIONS');
    const res = await call('GET', '/auth/login');
    expect(res.body.instance).toBe('req-405-GET');
  });

  it('answers 405 before reading the body: malformed JSON or another media type on a wrong method', async () => {
    const t = await h.tenant();
    for (const [path, allow] of [
      ['/v1/openapi.json', 'GET, HEAD, OPTIONS'],
      [`/v1/tenants/${t.tenantId}/destinations`, 'GET, HEAD, POST, OPTIONS'],
    ] as const) {
      for (const [type, body] of [
        ['application/json', '{"name": '],
        ['text/plain', 'hello'],
      ] as const) {
        const res = await fetch(`${h.url}${path}`, { method: 'PUT', headers: { 'content-type': type, 'x-request-id': 'req-405-body' }, body });
        const problem = (await res.json()) as { type: string; instance: string };
        expect({ path, type, status: res.status, allow: res.headers.get('allow'), problem: problem.type, instance: problem.instance }).toEqual({
          path,
          type,
          status: 405,
          allow,
          problem: 'https://hookline.dev/errors/method-not-allowed',
          instance: 'req-405-body',
        });
      }
    }
  });

  it('answers HEAD on a path without GET with 405 and Allow', async () => {
    const res = await fetch(`${h.url}/auth/login`, { method: 'HEAD' });
    expect([res.status, res.headers.get('allow')]).toEqual([405, 'POST, OPTIONS']);
  });

  it('answers every documented path with 405 for each method it does not list', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const templates = Object.entries(doc.paths).map(([p, ops]) => ({ re: new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}$`), methods: Object.keys(ops) }));
    let checked = 0;
    for (const template of Object.keys(doc.paths)) {
      // The MCP transport answers every method at /v1/mcp itself (its own 405, Allow: POST).
      if (template === '/v1/mcp') continue;
      const path = template.replace(/\{\w+\}/g, 'x1');
      const listed = new Set(templates.filter((t) => t.re.test(path)).flatMap((t) => t.methods));
      // OPTIONS is allowed on every known path (204, api-options.test.ts), so Allow names it too.
      const allow = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'].filter((m) => listed.has(m) || (m === 'head' && listed.has('get')) || m === 'options').map((m) => m.toUpperCase()).join(', ');
      for (const method of METHODS.filter((m) => !listed.has(m))) {
        const res = await call(method.toUpperCase(), path);
        expect({ method, path, status: res.status, allow: res.headers.get('allow'), type: res.body?.type }).toEqual({
          method,
          path,
          status: 405,
          allow,
          type: 'https://hookline.dev/errors/method-not-allowed',
        });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(150);
  });

  it('keeps 404 for unknown paths, whatever the method', async () => {
    const t = await h.tenant();
    for (const [method, path] of [
      ['GET', '/v1/nope'],
      ['POST', '/v1/nope'],
      ['DELETE', `/v1/tenants/${t.tenantId}/nothing`],
      ['PUT', `/v1/tenants/${t.tenantId}/ingesters/ing_x/apply/extra`],
      ['POST', '/auth/login/extra'],
    ] as const) {
      const res = await call(method, path);
      expect({ method, path, status: res.status, type: res.body.type, allow: res.headers.get('allow') }).toEqual({ method, path, status: 404, type: 'https://hookline.dev/errors/not-found', allow: null });
    }
  });

  it('still serves the documented methods (case and a trailing slash as express matches them)', async () => {
    expect((await h.call('GET', '/v1/openapi.json')).status).toBe(200);
    expect405(await call('POST', '/V1/OpenAPI.json/'), 'GET, HEAD, OPTIONS');
    // The MCP transport keeps its own 405.
    const mcp = await call('PUT', '/v1/mcp');
    expect([mcp.status, mcp.headers.get('allow')]).toEqual([405, 'POST, OPTIONS']);
  });
});
