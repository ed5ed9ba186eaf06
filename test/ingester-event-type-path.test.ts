// config.event_type_path is checked at write time with the parser ingest evaluates it with:
// a path ingest cannot parse would give every event a null type, and type filters would then
// drop them all without a word.
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('typepath');
});
afterAll(async () => {
  await h?.close();
});

const UNPARSEABLE = ['$.data[*].type', '$..type', '$.a[?(@.x)]', 'a b', '$.data.', Array.from({ length: 40 }, () => '.a').join('')];
const PARSEABLE = ['$.type', 'data.kind', '$.data.items[0].name', "$['odd-key']", '$["data"]["kind"]'];

// A refused write is audited (as a client error), but no ingester row is added or changed.
const rows = async (tenantId: string): Promise<unknown[]> =>
  (await h.db.pool.query('SELECT id, name, config, updated_at FROM ingesters WHERE tenant_id = $1 ORDER BY id', [tenantId])).rows;

function expectPathRefused(res: { status: number; headers: Headers; body: any }): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/validation-error', title: 'Validation Error', status: 400, instance: res.headers.get('x-request-id') });
  expect(res.body.errors).toEqual([{ field: 'config.event_type_path', message: expect.stringMatching(/not a supported path/) }]);
}

describe('event_type_path at write time', () => {
  it.each(UNPARSEABLE)('refuses %j on create, naming the field, and writes nothing', async (path) => {
    const t = await h.tenant();
    const before = await rows(t.tenantId);
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'in', provider: 'generic', config: { event_type_path: path } } });
    expectPathRefused(res);
    expect(await rows(t.tenantId)).toEqual(before);
  });

  it('refuses an unparseable path on update (PUT), leaving the stored ingester as it was; takes the paths ingest evaluates', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'in', provider: 'generic', config: { event_type_path: '$.type' } } });
    expect(made.status).toBe(201);
    const before = await rows(t.tenantId);
    const path = `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`;
    for (const bad of ['$.data[*].type', '$..type']) {
      expectPathRefused(await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'generic', config: { event_type_path: bad } } }));
    }
    expect((await h.call('GET', path, { key: t.apiKey })).body).toEqual(made.body);
    expect(await rows(t.tenantId)).toEqual(before);
    // The paths ingest evaluates are taken, stored as given.
    for (const good of PARSEABLE) {
      const ok = await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'generic', config: { event_type_path: good } } });
      expect([ok.status, ok.body.config.event_type_path]).toEqual([200, good]);
    }
  });

  it('refuses it on the flat /v1/endpoints and the dashboard (BFF) routes too', async () => {
    const t = await h.tenant();
    const body = { name: 'in', provider: 'generic', config: { event_type_path: '$..type' } };
    expectPathRefused(await h.call('POST', '/v1/endpoints', { key: t.apiKey, body }));
    const cls = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: 'c' } });
    expect(cls.status).toBe(201);
    expectPathRefused(await h.call('POST', `/api/bff/v1/tenants/${t.tenantId}/clusters/${cls.body.id}/ingesters`, { key: t.apiKey, body }));
    expect(await rows(t.tenantId)).toEqual([]);
  });
});
