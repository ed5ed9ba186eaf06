// Malformed input is the client's mistake: a 400 problem naming the field, never a 500 and
// never a wrong answer. Every response here also goes through the OpenAPI conformance check.
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apibadinput');
});
afterAll(async () => {
  await h.close();
});

function fields(body: { errors?: { field: string }[] }): string[] {
  return (body.errors ?? []).map((e) => e.field);
}

describe('NUL characters (PostgreSQL cannot store them)', () => {
  it('refuses them in the path, the query and the body with 400, writing nothing', async () => {
    const t = await h.tenant({ plan: 'enterprise' });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const T = `/v1/tenants/${t.tenantId}`;
    const count = async () => (await h.db.pool.query('SELECT (SELECT count(*) FROM ingesters WHERE tenant_id = $1) + (SELECT count(*) FROM saved_payloads WHERE tenant_id = $1) + (SELECT count(*) FROM api_keys WHERE tenant_id = $1) AS n', [t.tenantId])).rows[0].n;
    const before = await count();

    const cases: [string, string, unknown, string][] = [
      ['GET', `${T}/ingesters/%00`, undefined, 'path'],
      ['GET', `${T}/deliveries/dlv_%00`, undefined, 'path'],
      ['GET', `/v1/deliveries/%00/attempts`, undefined, 'path'],
      ['GET', `${T}/deliveries?event_id=%00`, undefined, 'query'],
      ['GET', `${T}/events?correlation_id=a%00b`, undefined, 'query'],
      ['GET', `/v1/delivery-attempts?delivery_id=a%00b`, undefined, 'query'],
      ['POST', `${T}/ingesters`, { name: 'a\u0000b', provider: 'generic' }, 'name'],
      ['POST', `${T}/saved-payloads`, { name: 's', body: 'x\u0000' }, 'body'],
      ['POST', `${T}/api-keys`, { name: '\u0000' }, 'name'],
      ['POST', `${T}/destinations`, { name: 'd', url: 'https://example.test/', config: { 'k\u0000': 1 } }, 'config.k\u0000'],
      ['POST', `${T}/delivery-flows`, { name: 'f', endpoint: p.ingesterId, target: p.destinationId, filter: { event_types: ['a\u0000'] } }, 'filter.event_types.0'],
      ['POST', '/v1/retry', { event_id: 'evt_\u0000' }, 'event_id'],
      ['POST', '/v1/replay', { delivery_ids: ['dlv_\u0000'] }, 'delivery_ids.0'],
      // HMAC-signed routes look the cluster up by the path: refused before that lookup.
      ['POST', '/v1/clusters/cls_%00/heartbeat', {}, 'path'],
      ['POST', '/v1/edge/clusters/cls_%00/work', {}, 'path'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await h.call(method, path, { key: t.apiKey, body });
      expect({ method, path, status: res.status, type: res.body.type, fields: fields(res.body) }).toEqual({
        method,
        path,
        status: 400,
        type: 'https://hookline.dev/errors/validation-error',
        fields: [field],
      });
      expect(res.body.instance).toBe(res.headers.get('x-request-id'));
    }
    // The login route (no credential) refuses them too, instead of querying with them.
    const login = await h.call('POST', '/auth/login', { body: { email: 'a\u0000@example.test', password: 'x' } });
    expect([login.status, fields(login.body)]).toEqual([400, ['email']]);
    expect(await count()).toEqual(before);
  });
});

describe('deeply nested bodies', () => {
  it('refuses free-form settings nested past 64 levels with 400 instead of failing to store them', async () => {
    const t = await h.tenant();
    const T = `/v1/tenants/${t.tenantId}`;
    const deep = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    const raw = (path: string, json: string) => h.call('POST', path, { key: t.apiKey, rawBody: json, headers: { 'content-type': 'application/json' } });
    for (const [path, json] of [
      [`${T}/destinations`, `{"name":"d","url":"https://example.test/","config":{"x":${deep(5000)}}}`],
      [`${T}/ingesters`, `{"name":"i","provider":"generic","config":{"x":${deep(5000)}}}`],
    ] as const) {
      const res = await raw(path, json);
      expect({ path, status: res.status, type: res.body.type, message: res.body.errors?.[0]?.message }).toEqual({
        path,
        status: 400,
        type: 'https://hookline.dev/errors/validation-error',
        message: 'is nested deeper than 64 levels',
      });
    }
    const { rows } = await h.db.pool.query('SELECT (SELECT count(*) FROM destinations WHERE tenant_id = $1) + (SELECT count(*) FROM ingesters WHERE tenant_id = $1) AS n', [t.tenantId]);
    expect(Number(rows[0].n)).toBe(0);
    // Settings of a sane depth are kept as sent.
    const ok = await raw(`${T}/destinations`, `{"name":"d","url":"https://example.test/","config":{"x":${deep(20)}}}`);
    expect(ok.status).toBe(201);
  });
});

describe('paths and query values', () => {
  it('answers a malformed %-escape in a path parameter with 400, not 500', async () => {
    const t = await h.tenant();
    const res = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/%E0%A4%A`, { key: t.apiKey });
    expect([res.status, res.body.type, fields(res.body)]).toEqual([400, 'https://hookline.dev/errors/validation-error', ['path']]);
  });

  it('refuses an offset past 2^31-1 instead of failing or wrapping to another page', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted' });
    const T = `/v1/tenants/${t.tenantId}`;
    // The largest offset still answers (an empty page: there are not that many rows).
    expect((await h.call('GET', `${T}/ingesters?offset=2147483647`, { key: t.apiKey })).body).toEqual({ ingesters: [], next_cursor: null, next_offset: null });
    // 2^32 used to wrap to offset 0 (the first page again), larger values to a 500.
    for (const path of [`${T}/ingesters?offset=4294967296`, `${T}/deliveries?offset=99999999999999999999`, '/v1/retained-payloads?offset=9223372036854775808']) {
      const res = await h.call('GET', path, { key: t.apiKey });
      expect({ path, status: res.status, fields: fields(res.body) }).toEqual({ path, status: 400, fields: ['offset'] });
    }
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const offset = doc.paths['/v1/tenants/{tid}/ingesters'].get.parameters.find((x: { name: string }) => x.name === 'offset');
    expect(offset.schema.maximum).toBe(2147483647);
  });

  it('refuses timestamps PostgreSQL cannot hold (year 0) in filters and in a replay body', async () => {
    const t = await h.tenant();
    const list = await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries?since=0000-01-01T00:00:00Z`, { key: t.apiKey });
    expect([list.status, fields(list.body)]).toEqual([400, ['since']]);
    const replay = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { until: '0000-06-01T00:00:00Z' } });
    expect([replay.status, fields(replay.body)]).toEqual([400, ['until']]);
    // Year 1 is fine.
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries?since=0001-01-01T00:00:00Z`, { key: t.apiKey })).status).toBe(200);
  });

  it('refuses numbers JSON cannot hold (1e400 is Infinity, stored as null) in a flow filter, writing nothing', async () => {
    const t = await h.tenant({ plan: 'enterprise' });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const flows = async () => (await h.db.pool.query('SELECT count(*)::int AS n FROM delivery_flows WHERE tenant_id = $1', [t.tenantId])).rows[0].n;
    const before = await flows();
    const post = (filter: string) =>
      h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, {
        key: t.apiKey,
        rawBody: `{"name":"f","endpoint":"${p.ingesterId}","target":"${p.destinationId}","filter":${filter}}`,
        headers: { 'content-type': 'application/json' },
      });
    const match = await post('{"match":{"body.amount":{"$gt":1e400}}}');
    expect([match.status, fields(match.body)]).toEqual([400, ['filter.match.body.amount.$gt']]);
    const jsonpath = await post('{"jsonpath":"$[?(@.body.amount > 1e400)]"}');
    expect([jsonpath.status, fields(jsonpath.body)]).toEqual([400, ['filter.jsonpath']]);
    expect(await flows()).toBe(before);
  });

  it('documents the audit log action filter it serves', async () => {
    const t = await h.tenant();
    await h.call('POST', `/v1/tenants/${t.tenantId}/saved-payloads`, { key: t.apiKey, body: { name: 's', body: '{}' } });
    const res = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs?action=savedPayloads.create`, { key: t.apiKey });
    expect(res.body.audit_logs.map((a: { action: string }) => a.action)).toEqual(['savedPayloads.create']);
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    expect(doc.paths['/v1/tenants/{tid}/audit-logs'].get.parameters.map((x: { name: string }) => x.name)).toContain('action');
  });
});

describe('bodies the JSON parser refuses', () => {
  it('answers 413 and 415 as documented problem details', async () => {
    const t = await h.tenant();
    const big = await h.call('POST', `/v1/tenants/${t.tenantId}/saved-payloads`, { key: t.apiKey, body: { name: 'big', body: 'x'.repeat(1_100_000) } });
    expect([big.status, big.body.type]).toEqual([413, 'https://hookline.dev/errors/payload-too-large']);
    const latin1 = await h.call('POST', `/v1/tenants/${t.tenantId}/saved-payloads`, {
      key: t.apiKey,
      rawBody: '{"name":"a","body":"b"}',
      headers: { 'content-type': 'application/json; charset=latin1' },
    });
    expect([latin1.status, latin1.body.type]).toEqual([415, 'https://hookline.dev/errors/unsupported-media-type']);
  });
});
