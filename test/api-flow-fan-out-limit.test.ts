// FLOWS_PER_INGESTER_MAX bounds one ingester's fan-out: every event of it makes one delivery
// per flow, in one router insert and one deliver job shared by all tenants.
import { createPipeline } from './api-fixtures';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apifanout', { FLOWS_PER_INGESTER_MAX: '3' }, { quiet: true });
});
afterAll(async () => {
  await h.close();
});

it('a create or a move past the limit is 409 flow_limit_reached and writes nothing; a DELETED flow frees its place', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const other = await createPipeline(h, t.tenantId, t.apiKey, 'q');
  const flow = (name: string, endpoint = p.ingesterId) => ({ key: t.apiKey, body: { name, endpoint, target: p.destinationId } });
  const base = `/v1/tenants/${t.tenantId}/delivery-flows`;
  expect((await h.call('POST', base, flow('f2'))).status).toBe(201);
  const third = await h.call('POST', base, flow('f3'));
  expect(third.status).toBe(201);

  const refused = await h.call('POST', base, flow('f4'));
  expect([refused.status, refused.body.type, refused.body.reason_code, refused.body.limit, refused.body.ingester_id, refused.body.instance]).toEqual([
    409,
    expect.stringMatching(/\/conflict$/),
    'flow_limit_reached',
    3,
    p.ingesterId,
    refused.headers.get('x-request-id'),
  ]);
  const count = async (): Promise<number> => (await h.db.pool.query(`SELECT count(*)::int AS n FROM delivery_flows WHERE ingester_id = $1 AND state <> 'DELETED'`, [p.ingesterId])).rows[0].n;
  expect(await count()).toBe(3);

  // Moving another ingester's flow onto the full one is refused too; replacing one of its own is not.
  const move = await h.call('PUT', `${base}/${other.flowId}`, flow('q-flow'));
  expect([move.status, move.body.reason_code]).toEqual([409, 'flow_limit_reached']);
  expect((await h.call('PUT', `${base}/${third.body.id}`, flow('f3-renamed'))).status).toBe(200);
  expect(await count()).toBe(3);

  expect((await h.call('POST', `${base}/${third.body.id}/disable`, { key: t.apiKey })).status).toBe(200);
  expect(await count()).toBe(3); // a DISABLED flow still counts: it can be enabled again
  expect((await h.call('POST', base, flow('f5'))).status).toBe(409);
  expect((await h.call('DELETE', `${base}/${third.body.id}`, { key: t.apiKey })).status).toBe(200);
  expect((await h.call('POST', base, flow('f4'))).status).toBe(201);
  expect(await count()).toBe(3);
});

it('an ingester already past the limit (flows from before it) keeps its flows editable; only a move onto it is refused', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const base = `/v1/tenants/${t.tenantId}/delivery-flows`;
  // Three more written directly, as an older release allowed: 4 flows, limit 3.
  for (let i = 0; i < 3; i++) {
    await h.db.pool.query(`INSERT INTO delivery_flows (id, tenant_id, name, ingester_id, destination_id, updated_at) VALUES ($1, $2, $3, $4, $5, now())`, [`flw_old${i}${Date.now()}`, t.tenantId, `old-${i}`, p.ingesterId, p.destinationId]);
  }
  const edit = await h.call('PUT', `${base}/${p.flowId}`, { key: t.apiKey, body: { name: 'renamed', endpoint: p.ingesterId, target: p.destinationId, filter: { event_types: ['a'] } } });
  expect([edit.status, edit.body.name]).toEqual([200, 'renamed']);
  expect((await h.call('POST', base, { key: t.apiKey, body: { name: 'one-more', endpoint: p.ingesterId, target: p.destinationId } })).body.reason_code).toBe('flow_limit_reached');
});
