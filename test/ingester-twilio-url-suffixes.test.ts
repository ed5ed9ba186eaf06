// config.twilio_url_suffixes lists the URLs (as suffixes after /in/<id>) a Twilio ingester was
// given to Twilio as; ingest checks Twilio signatures on those alone. A bad list is refused at
// write time like every other config error (400 validation-error naming the field), and the
// refused write changes nothing.
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('twsuffix');
});
afterAll(async () => {
  await h?.close();
});

const rows = async (tenantId: string): Promise<unknown[]> =>
  (await h.db.pool.query('SELECT id, name, provider, config, updated_at FROM ingesters WHERE tenant_id = $1 ORDER BY id', [tenantId])).rows;

const BAD: [string, unknown, string][] = [
  ['an entry without a leading / or ?', ['sms'], 'config.twilio_url_suffixes.0'],
  ['a full URL', ['https://hooks.example.test/in/x/sms'], 'config.twilio_url_suffixes.0'],
  ['an entry over 512 characters', ['/ok', `/${'a'.repeat(512)}`], 'config.twilio_url_suffixes.1'],
  ['more than 20 entries', Array.from({ length: 21 }, (_, i) => `/s${i}`), 'config.twilio_url_suffixes'],
  ['an empty list (no URL would verify)', [], 'config.twilio_url_suffixes'],
  ['a string instead of a list', '/sms', 'config.twilio_url_suffixes'],
  ['a non-string entry', ['', 7], 'config.twilio_url_suffixes.1'],
];

function expectRefused(res: { status: number; headers: Headers; body: any }, field: string): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/validation-error', title: 'Validation Error', status: 400, instance: res.headers.get('x-request-id') });
  expect(res.body.errors).toEqual([{ field, message: expect.any(String) }]);
}

it.each(BAD)('refuses %s on create, naming the field, and writes nothing', async (_what, value, field) => {
  const t = await h.tenant();
  const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'tw', provider: 'twilio', config: { signing_secret: 'twilio-token-1', twilio_url_suffixes: value } } });
  expectRefused(res, field);
  expect(await rows(t.tenantId)).toEqual([]);
});

it('takes a valid list (stored and shown as given); a PUT with a bad one is refused and leaves the ingester as it was', async () => {
  const t = await h.tenant();
  const suffixes = ['', '/sms', '/voice?lang=en', '?src=twilio', `/${'a'.repeat(511)}`];
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'tw', provider: 'twilio', config: { signing_secret: 'twilio-token-1', twilio_url_suffixes: suffixes } } });
  expect(made.status).toBe(201);
  expect(made.body.config.twilio_url_suffixes).toEqual(suffixes);
  const path = `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`;
  const before = await rows(t.tenantId);
  for (const [, value, field] of BAD) {
    expectRefused(await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'twilio', config: { twilio_url_suffixes: value } } }), field);
  }
  expect(await rows(t.tenantId)).toEqual(before);
  expect((await h.call('GET', path, { key: t.apiKey })).body).toEqual(made.body);
  const ok = await h.call('PUT', path, { key: t.apiKey, body: { name: 'tw', provider: 'twilio', config: { twilio_url_suffixes: Array.from({ length: 20 }, (_, i) => `/s${i}`) } } });
  expect([ok.status, ok.body.config.twilio_url_suffixes.length]).toEqual([200, 20]);
});

it('is refused on the flat /v1/endpoints route too', async () => {
  const t = await h.tenant();
  expectRefused(await h.call('POST', '/v1/endpoints', { key: t.apiKey, body: { name: 'tw', provider: 'twilio', config: { twilio_url_suffixes: ['sms'] } } }), 'config.twilio_url_suffixes.0');
  expect(await rows(t.tenantId)).toEqual([]);
});
