import type { AddressInfo } from 'node:net';
import { buildApp, type ApiPlugin } from '../services/api/src/app';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apioas');
});
afterAll(async () => {
  await h.close();
});

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every method + path express would answer, read from the router stack itself (`_all` = any method). */
function expressRoutes(stack: Layer[]): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const path of ([] as string[]).concat(layer.route.path)) {
        for (const m of Object.keys(layer.route.methods)) out.push(`${m} ${path.replace(/:(\w+)/g, '{$1}')}`);
      }
    } else if (layer.handle?.stack) out.push(...expressRoutes(layer.handle.stack));
  }
  return out;
}

/**
 * Routes that match many requests stand for what the document lists under them: `_all P` for
 * the methods documented at P that no explicit route serves, `get P/*rest` for the documented
 * GET paths under P/ that no explicit route serves. Each must stand for at least one.
 */
function resolveServed(served: string[], documented: string[]): string[] {
  const explicit = served.filter((r) => !r.startsWith('_all ') && !r.includes('*'));
  const out = [...explicit];
  for (const r of served.filter((x) => !explicit.includes(x))) {
    const [method, path] = r.split(' ') as [string, string];
    const covers = method === '_all'
      ? documented.filter((d) => d.endsWith(` ${path}`))
      : documented.filter((d) => d.startsWith(`${method} ${path.slice(0, path.indexOf('*'))}`));
    const fresh = covers.filter((d) => !explicit.includes(d));
    expect({ route: r, covers: fresh.length > 0 }).toEqual({ route: r, covers: true });
    out.push(...fresh);
  }
  return [...new Set(out)];
}

describe('OpenAPI document', () => {
  it('is served without credentials as OpenAPI 3.1', async () => {
    const res = await h.call('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.components.securitySchemes).toHaveProperty('apiKey');
  });

  it('documents every route express serves, and nothing else', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    expect(doc).toEqual(h.api.openApi());
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`));
    const served = resolveServed(expressRoutes((h.api.app as unknown as { router: { stack: Layer[] } }).router.stack), documented);
    expect(served.length).toBeGreaterThan(60);
    // The plugins main.ts mounts are walked too.
    expect(served).toEqual(expect.arrayContaining(['post /v1/edge/clusters/{cid}/work', 'post /v1/mcp', 'get /v1/mcp', 'get /v1/mcp/evidence/{id}', 'put /v1/tenants/{tid}/mcp-keys/{kid}/tool-groups/{group}', 'get /ai/evidence/v1/capability-manifest.json']));
    expect(served.filter((r) => !documented.includes(r))).toEqual([]);
    expect(documented.filter((r) => !served.includes(r))).toEqual([]);
  });

  it('gives every operation a unique id, its errors as problem details, and its security', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const routeIds = new Set(h.api.routes.map((r) => r.operationId));
    const ids = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { operationId?: string; responses: Record<string, { content?: Record<string, unknown> }>; security: unknown[] }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.operationId) {
          expect(ids.has(op.operationId)).toBe(false);
          ids.add(op.operationId);
        }
        const errors = Object.keys(op.responses).filter((s) => Number(s) >= 400 && !['/healthz', '/readyz'].includes(path));
        // POST /v1/mcp answers a 429 in JSON-RPC (its body answers each request); everything else, the MCP transport's refusals included, is problem details.
        const jsonRpcErrors = `${method} ${path}` === 'post /v1/mcp' ? ['429'] : [];
        for (const s of errors) expect(Object.keys(op.responses[s]!.content ?? {})).toEqual(jsonRpcErrors.includes(s) ? expect.arrayContaining(['application/json']) : ['application/problem+json']);
        for (const req of op.security) for (const scheme of Object.keys(req as object)) expect(doc.components.securitySchemes).toHaveProperty(scheme);
        if (path.startsWith('/v1/tenants/') && routeIds.has(op.operationId ?? '')) {
          expect({ op: `${method} ${path}`, security: op.security }).toEqual({ op: `${method} ${path}`, security: [{ apiKey: [] }, { bearer: [] }] });
          expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '404', '429', '500']));
        } else if (path.startsWith('/v1/tenants/')) {
          // Plugin routes (MCP key management): the api's credentials, or an MCP key with mcp:admin:keys.
          expect({ op: `${method} ${path}`, security: op.security }).toEqual({ op: `${method} ${path}`, security: [{ apiKey: [] }, { bearer: [] }, { mcpApiKey: [] }] });
          expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '404', '500']));
        } else if (path.startsWith('/v1/mcp/')) {
          expect({ op: `${method} ${path}`, security: op.security }).toEqual({ op: `${method} ${path}`, security: [{ mcpApiKey: [] }] });
          expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '500']));
        }
      }
    }
  });

  it('documents status as an alias of state on every config list, once per operation', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const lists = ['/v1/tenants/{tid}/ingesters', '/v1/tenants/{tid}/destinations', '/v1/tenants/{tid}/delivery-flows', '/v1/tenants/{tid}/clusters', '/v1/endpoints', '/v1/targets', '/v1/flows'];
    for (const path of lists) {
      const params = doc.paths[path].get.parameters as { name: string; in: string; schema: { enum?: string[] } }[];
      const query = params.filter((p) => p.in === 'query');
      expect({ path, names: query.map((p) => p.name).filter((n) => n === 'state' || n === 'status') }).toEqual({ path, names: ['state', 'status'] });
      expect(query.find((p) => p.name === 'status')!.schema.enum).toEqual(['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED']);
      expect(new Set(query.map((p) => p.name)).size).toBe(query.length);
    }
  });

  it('lists only discovery documents the wildcard route really serves, each matching its schema', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const listed = Object.keys(doc.paths).filter((p) => p.startsWith('/ai/'));
    expect(listed).toEqual(expect.arrayContaining(['/ai/evidence/v1', '/ai/evidence/v1/capability-manifest.json', '/ai/security/v1', '/ai/security/v1/threat-model.json']));
    for (const path of listed) expect({ path, status: (await h.call('GET', path)).status }).toEqual({ path, status: 200 });
    // The index also answers with the trailing slash; a name nobody publishes is a 404 problem.
    expect((await h.call('GET', '/ai/security/v1/', { unchecked: true })).body).toEqual((await h.call('GET', '/ai/security/v1')).body);
    const missing = await h.call('GET', '/ai/evidence/v1/secrets.json', { unchecked: true });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/application\/problem\+json/);
  });

  it('mounts plugins before the 404 handler and documents their paths', async () => {
    const plugin: ApiPlugin = {
      name: 'probe',
      mount: (app) => app.get('/v1/probe', (_req, res) => void res.json({ ok: true })),
      openApiPaths: { '/v1/probe': { get: { summary: 'probe', responses: { 200: { description: 'ok' } } } } },
    };
    const api = buildApp(h.api.context, [plugin]);
    const server = api.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(await (await fetch(`${base}/v1/probe`)).json()).toEqual({ ok: true });
      const doc = (await (await fetch(`${base}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
      expect(doc.paths['/v1/probe']).toEqual(plugin.openApiPaths!['/v1/probe']);
      const served = expressRoutes((api.app as unknown as { router: { stack: Layer[] } }).router.stack);
      expect(served).toContain('get /v1/probe');
      expect((await fetch(`${base}/v1/nothing-here`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
