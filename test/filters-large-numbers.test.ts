// Filter numbers a 64-bit double does not hold as written (packages/filters README, "Numbers"):
// an integer beyond ±(2^53−1) reaches the API rounded (1234567890123456789 reads as
// 1234567890123456800, the same double as its neighbours within ±128), so a filter on one id
// would route other ids' events. Refused on every filter write as a 400 validation-error
// naming the field, and nothing is stored.
import { createPipeline } from './api-fixtures';
import { startApi, type ApiHarness, VALIDATION } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('filtersbignum');
});
afterAll(async () => {
  await h?.close();
});

describe('filter numbers beyond ±(2^53−1)', () => {
  it('are refused on flow create and update, naming the field, and nothing is written', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const flows = async () => (await h.db.pool.query('SELECT id, filter, updated_at FROM delivery_flows WHERE tenant_id = $1 ORDER BY id', [t.tenantId])).rows;
    const before = await flows();
    // Raw bodies: the digits as a client sends them.
    const write = (method: string, path: string, filter: string) =>
      h.call(method, path, {
        key: t.apiKey,
        rawBody: `{"name":"f2","endpoint":"${p.ingesterId}","target":"${p.destinationId}","filter":${filter}}`,
        headers: { 'content-type': 'application/json' },
      });
    for (const [method, path] of [
      ['POST', `/v1/tenants/${t.tenantId}/delivery-flows`],
      ['PUT', `/v1/tenants/${t.tenantId}/delivery-flows/${p.flowId}`],
    ] as const) {
      const match = await write(method, path, '{"match":{"$or":[{"type":"a"},{"body.user_id":1234567890123456789}]}}');
      expect([match.status, match.body.type, match.body.errors]).toEqual([
        400,
        VALIDATION,
        [{ field: 'filter.match.$or[1].body.user_id', message: expect.stringContaining('must be within ±9007199254740991 (2^53−1)') }],
      ]);
      const jsonpath = await write(method, path, '{"jsonpath":["$.body","$.body[?(@.user_id == 1234567890123456789)]"]}');
      expect([jsonpath.status, jsonpath.body.type, jsonpath.body.errors]).toEqual([
        400,
        VALIDATION,
        [{ field: 'filter.jsonpath[1]', message: expect.stringContaining('(1234567890123456789 reads as 1234567890123456800)') }],
      ]);
      const fraction = await write(method, path, '{"jsonpath":"$.body[?(@.rate == 0.1234567890123456789)]"}');
      expect([fraction.status, fraction.body.errors]).toEqual([400, [{ field: 'filter.jsonpath', message: expect.stringContaining('more digits than a 64-bit number holds') }]]);
    }
    expect(await flows()).toEqual(before);

    // The largest safe integer is taken and stored as written.
    const ok = await write('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, '{"match":{"body.user_id":9007199254740991}}');
    expect([ok.status, ok.body.filter]).toEqual([201, { match: { 'body.user_id': 9007199254740991 } }]);
  });

  it("are refused in an ingester's filters, naming filters.… fields, and nothing is written", async () => {
    const t = await h.tenant();
    const rows = async () => (await h.db.pool.query('SELECT id, filters FROM ingesters WHERE tenant_id = $1', [t.tenantId])).rows;
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, {
      key: t.apiKey,
      rawBody: '{"name":"i","provider":"generic","filters":{"match":{"body.ids":{"$in":[1,-12345678901234567890]}}}}',
      headers: { 'content-type': 'application/json' },
    });
    expect([res.status, res.body.type, res.body.errors]).toEqual([400, VALIDATION, [{ field: 'filters.match.body.ids.$in', message: expect.stringContaining('(this one reads as -12345678901234567000)') }]]);
    expect(await rows()).toEqual([]);
  });
});
