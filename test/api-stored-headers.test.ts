// Ingest keeps every inbound header of an event (event_payloads.headers), credentials a
// provider may send included. No view of the api returns them: events, traces, retained
// payloads, deliveries, attempts, evidence, and the MCP mirror all answer without them,
// while the stored row keeps them untouched (replay and verification need the raw request).
import { MCP_SCOPES } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

const SECRETS = {
  authorization: 'Bearer sk_live_SECRET_AUTHORIZATION',
  cookie: 'session=SECRET_COOKIE',
  'proxy-authorization': 'Basic SECRET_PROXY',
  'x-api-key': 'SECRET_X_API_KEY',
};

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiheaders');
});
afterAll(async () => {
  await h.close();
});

test('stored request credentials appear in no api or MCP response', async () => {
  // Pro: retained payloads are listed from that plan up.
  const t = await h.tenant({ plan: 'pro' });
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
  await h.db.pool.query('UPDATE event_payloads SET headers = $2 WHERE event_id = $1', [evt, JSON.stringify({ 'content-type': 'application/json', ...SECRETS })]);
  const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 2 });
  const mcpKey = (await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'reader', scopes: [...MCP_SCOPES] } })).body.key as string;

  const api = [
    `/v1/tenants/${t.tenantId}/events`,
    `/v1/tenants/${t.tenantId}/events/${evt}`,
    `/v1/tenants/${t.tenantId}/deliveries`,
    '/v1/traces',
    '/v1/retained-payloads',
    '/v1/dlq',
    `/v1/delivery-attempts?delivery_id=${dlv}`,
    '/v1/evidence',
    '/v1/overview',
  ];
  const mcp = [`/v1/mcp/logs/${evt}`, `/v1/mcp/logs/${dlv}`, `/v1/mcp/deliveries/${dlv}/status`];
  const answers = [
    ...(await Promise.all(api.map(async (path) => [path, await h.call('GET', path, { key: t.apiKey })] as const))),
    ...(await Promise.all(mcp.map(async (path) => [path, await h.call('GET', path, { headers: { 'x-mcp-api-key': mcpKey } })] as const))),
  ];
  for (const [path, res] of answers) {
    expect([path, res.status]).toEqual([path, 200]);
    const text = JSON.stringify(res.body);
    for (const secret of Object.values(SECRETS)) expect([path, text.includes(secret)]).toEqual([path, false]);
  }
  // The views did see the event (the check above is not vacuous).
  expect(answers.find(([path]) => path.endsWith(`/events/${evt}`))![1].body).toMatchObject({ id: evt, payload_retained: true });
  expect(answers.find(([path]) => path === '/v1/retained-payloads')![1].body.retained_payloads.map((r: { event_id: string }) => r.event_id)).toContain(evt);

  // What ingest stored is unchanged.
  const { rows } = await h.db.pool.query('SELECT headers FROM event_payloads WHERE event_id = $1', [evt]);
  expect(rows[0].headers).toMatchObject(SECRETS);
});
