// SPEC.md (Endpoint (ingester)): `filters`, optional event filtering conditions (event type,
// headers). The same format and the same checks as a delivery flow's `filter`
// (@hookline/filters validateFilter), on every ingester write route; shown in the view (null
// when none); enforced by the router ahead of the ingester's flows (router-route-events.test.ts).
import { createRedis, onConfigChange, type Redis } from '@hookline/queues';
import { waitFor } from '@hookline/testing';
import { FlowCache } from '../services/router/src/flow-cache';
import { routeEvents } from '../services/router/src/route-events';
import { startApi, type ApiHarness } from './api-harness';
import { deliveriesOf, eventState, insertEvent } from './router-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('ingfilters');
});
afterAll(async () => {
  await h?.close();
});

const FILTERS = { event_types: ['invoice.*'], match: { 'headers.x-env': 'prod' } };

// A refused write is audited (as a client error), but no ingester row is added or changed.
const rows = async (tenantId: string): Promise<unknown[]> =>
  (await h.db.pool.query('SELECT id, name, config, filters, updated_at FROM ingesters WHERE tenant_id = $1 ORDER BY id', [tenantId])).rows;

// Each is refused by a flow's filter check; an ingester's names the same fields under `filters`.
const BAD: unknown[] = [
  { jsonpath: '$[' },
  { jsonpath: ['$.a', 7] },
  { event_types: 'invoice.paid' },
  { match: { 'body.amount': { $regex: '.*' } } },
  { match: { $or: [{ type: 'a' }, { 'body.amount': { $gte: {} } }] } },
  { headers: { 'x-env': 'prod' } },
  { jsonpath: '$[?(@.a > 1e400)]' },
  // Beyond ±(2^53−1) a number is rounded (read as 1234567890123456800): it would match other ids.
  JSON.parse('{"match":{"body.user_id":1234567890123456789}}'),
  { jsonpath: '$.body[?(@.user_id == 1234567890123456789)]' },
];

describe('ingester filters', () => {
  it('stores filters on create and shows them in the view (null when none), on get and list', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'gated', provider: 'generic', filters: FILTERS } });
    expect(made.status).toBe(201);
    expect(made.body.filters).toEqual(FILTERS);
    const plain = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'plain', provider: 'generic' } });
    expect(plain.status).toBe(201);
    expect(plain.body.filters).toBeNull();

    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`, { key: t.apiKey })).body).toEqual(made.body);
    const list = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
    expect(list.body.ingesters.map((i: { id: string; filters: unknown }) => [i.id, i.filters])).toEqual([
      [plain.body.id, null],
      [made.body.id, FILTERS],
    ]);
    const stored = await h.db.pool.query('SELECT id, filters FROM ingesters WHERE tenant_id = $1 ORDER BY id', [t.tenantId]);
    expect(stored.rows.map((r) => [r.id, r.filters])).toEqual([made.body.id, plain.body.id].sort().map((id) => [id, id === made.body.id ? FILTERS : null]));
  });

  it.each(BAD.map((f) => [JSON.stringify(f), f]))("refuses %s on create exactly as a flow's filter check does, naming filters.… fields, and writes nothing", async (_name, bad) => {
    const t = await h.tenant();
    const ing = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'i', provider: 'generic' } });
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/' } });
    const flow = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'f', endpoint: ing.body.id, target: dst.body.id, filter: bad } });
    expect(flow.status).toBe(400);
    const before = await rows(t.tenantId);

    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'gated', provider: 'generic', filters: bad } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/validation-error', status: 400, instance: res.headers.get('x-request-id') });
    expect(res.body.errors.length).toBeGreaterThan(0);
    expect(res.body.errors).toEqual(flow.body.errors.map((e: { field: string; message: string }) => ({ ...e, field: e.field.replace(/^filter\b/, 'filters') })));
    for (const e of res.body.errors) expect(e.field).toMatch(/^filters\./);
    expect(await rows(t.tenantId)).toEqual(before);
  });

  it('refuses filters that are not an object, naming the field', async () => {
    const t = await h.tenant();
    for (const bad of ['invoice.*', ['invoice.*'], 3]) {
      const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'x', provider: 'generic', filters: bad } });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['filters']);
    }
    expect(await rows(t.tenantId)).toEqual([]);
  });

  it('replaces filters with PUT, keeps them when the PUT leaves them out, removes them with null, and refuses bad ones before writing', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'a', provider: 'generic', filters: FILTERS } });
    const path = `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`;
    const next = { event_types: ['charge.*'], jsonpath: "$.headers['X-Env']" };

    const put = await h.call('PUT', path, { key: t.apiKey, body: { name: 'b', provider: 'generic', filters: next } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'b', filters: next });
    expect((await h.call('GET', path, { key: t.apiKey })).body).toEqual(put.body);

    // Refused, naming the field; the stored ingester is left as it was (also its other fields).
    const before = await rows(t.tenantId);
    for (const bad of BAD) {
      const res = await h.call('PUT', path, { key: t.apiKey, body: { name: 'c', provider: 'generic', config: { event_type_path: '$.type' }, filters: bad } });
      expect(res.status).toBe(400);
      for (const e of res.body.errors) expect(e.field).toMatch(/^filters\./);
    }
    // Checked before the lookup, as on create: an unknown id with bad filters is 400, not 404.
    expect((await h.call('PUT', `/v1/tenants/${t.tenantId}/ingesters/ing_unknown`, { key: t.apiKey, body: { name: 'c', provider: 'generic', filters: BAD[0] } })).status).toBe(400);
    expect(await rows(t.tenantId)).toEqual(before);

    const kept = await h.call('PUT', path, { key: t.apiKey, body: { name: 'c', provider: 'generic' } });
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ name: 'c', filters: next });

    const removed = await h.call('PUT', path, { key: t.apiKey, body: { name: 'c', provider: 'generic', filters: null } });
    expect(removed.status).toBe(200);
    expect(removed.body.filters).toBeNull();
    expect((await h.db.pool.query('SELECT filters FROM ingesters WHERE id = $1', [made.body.id])).rows[0].filters).toBeNull();

    const empty = await h.call('PUT', path, { key: t.apiKey, body: { name: 'c', provider: 'generic', filters: {} } });
    expect([empty.status, empty.body.filters]).toEqual([200, {}]);
  });

  it('takes and checks filters on the flat /v1/endpoints and the dashboard (BFF) routes too', async () => {
    const t = await h.tenant();
    const flat = await h.call('POST', '/v1/endpoints', { key: t.apiKey, body: { name: 'flat', provider: 'generic', filters: FILTERS } });
    expect([flat.status, flat.body.filters]).toEqual([201, FILTERS]);
    const cls = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: 'c' } });
    const bffPath = `/api/bff/v1/tenants/${t.tenantId}/clusters/${cls.body.id}/ingesters`;
    const bff = await h.call('POST', bffPath, { key: t.apiKey, body: { name: 'bff', provider: 'generic', filters: FILTERS } });
    expect([bff.status, bff.body.filters]).toEqual([201, FILTERS]);
    const before = await rows(t.tenantId);
    const bad = { name: 'bad', provider: 'generic', filters: { jsonpath: '$[' } };
    for (const res of [await h.call('POST', '/v1/endpoints', { key: t.apiKey, body: bad }), await h.call('POST', bffPath, { key: t.apiKey, body: bad })]) {
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['filters.jsonpath']);
    }
    expect(await rows(t.tenantId)).toEqual(before);
  });

  it('is documented in the OpenAPI document: request bodies (the flow filter schema) and the view', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema;
    const flowFilter = body('/v1/tenants/{tid}/delivery-flows', 'post').properties.filter;
    for (const [path, method] of [
      ['/v1/tenants/{tid}/ingesters', 'post'],
      ['/v1/tenants/{tid}/ingesters/{iid}', 'put'],
      ['/v1/endpoints', 'post'],
      ['/api/bff/v1/tenants/{tid}/clusters/{cid}/ingesters', 'post'],
    ] as const) {
      const filters = body(path, method).properties.filters;
      expect({ path, type: filters.type, description: filters.description }).toEqual({ path, type: ['object', 'null'], description: expect.stringContaining('flow') });
      // The flow's schema, made nullable: nothing else differs.
      const { type: _t, description: _d, ...rest } = filters;
      const { type: _ft, description: _fd, ...flowRest } = flowFilter;
      expect(rest).toEqual(flowRest);
    }
    const view = doc.paths['/v1/tenants/{tid}/ingesters/{iid}'].get.responses['200'].content['application/json'].schema;
    const resolved = view.$ref ? doc.components.schemas[view.$ref.split('/').pop()] : view;
    expect(resolved.properties.filters).toMatchObject({ type: ['object', 'null'] });
  });
});

describe('ingester filters, api to router', () => {
  let sub: Redis;
  afterAll(() => sub?.disconnect());

  it("a PUT's new filters reach a router holding the ingester in its cache, through the PUT's announcement", async () => {
    const t = await h.tenant();
    const ing = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'i', provider: 'generic', filters: { event_types: ['charge.*'] } } });
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/' } });
    const flow = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'f', endpoint: ing.body.id, target: dst.body.id } });
    expect([ing.status, dst.status, flow.status]).toEqual([201, 201, 201]);

    // A router as main.ts wires it: a long-lived cache dropped on announcements.
    const cache = new FlowCache(h.db.pool, 600_000);
    const seen: string[] = [];
    sub = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
    await onConfigChange(sub, h.prefix, (c) => {
      cache.invalidate(c);
      seen.push(`${c.kind}:${c.id}`);
    });
    const deps = { pool: h.db.pool, producer: h.producer, flows: cache, logger: h.api.context.logger };
    const route = async (): Promise<string> => {
      const e = await insertEvent(h.db.pool, { tenantId: t.tenantId, ingesterId: ing.body.id, type: 'invoice.paid' });
      await routeEvents(deps, { eventIds: [e] });
      return e;
    };
    const before = await route();
    expect((await eventState(h.db.pool, before)).status_reason).toBe('ingester_filter_rejected');

    const put = await h.call('PUT', `/v1/tenants/${t.tenantId}/ingesters/${ing.body.id}`, { key: t.apiKey, body: { name: 'i', provider: 'generic', filters: { event_types: ['invoice.*'] } } });
    expect(put.status).toBe(200);
    await waitFor(() => seen.includes(`ingester:${ing.body.id}`), { what: "the PUT's announcement" });
    const after = await route();
    expect(await eventState(h.db.pool, after)).toMatchObject({ status: 'filtered', status_reason: null });
    expect((await deliveriesOf(h.db.pool, [after])).map((r) => r.flow_id)).toEqual([flow.body.id]);
  });
});
