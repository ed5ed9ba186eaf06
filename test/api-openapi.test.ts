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
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every method + path express would answer, read from the router stack itself. */
function expressRoutes(stack: Layer[]): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) for (const m of Object.keys(layer.route.methods)) out.push(`${m} ${layer.route.path.replace(/:(\w+)/g, '{$1}')}`);
    else if (layer.handle?.stack) out.push(...expressRoutes(layer.handle.stack));
  }
  return out;
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
    const served = expressRoutes((h.api.app as unknown as { router: { stack: Layer[] } }).router.stack);
    expect(served.length).toBeGreaterThan(60);
    expect(served.filter((r) => !documented.includes(r))).toEqual([]);
    expect(documented.filter((r) => !served.includes(r))).toEqual([]);
  });

  it('gives every operation a unique id, its errors as problem details, and its security', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const ids = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { operationId?: string; responses: Record<string, { content?: Record<string, unknown> }>; security: unknown[] }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.operationId) {
          expect(ids.has(op.operationId)).toBe(false);
          ids.add(op.operationId);
        }
        const errors = Object.keys(op.responses).filter((s) => Number(s) >= 400 && !['/healthz', '/readyz'].includes(path));
        for (const s of errors) expect(Object.keys(op.responses[s]!.content ?? {})).toEqual(['application/problem+json']);
        if (path.startsWith('/v1/tenants/')) {
          expect({ op: `${method} ${path}`, security: op.security }).toEqual({ op: `${method} ${path}`, security: [{ apiKey: [] }, { bearer: [] }] });
          expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '404', '429', '500']));
        }
      }
    }
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
