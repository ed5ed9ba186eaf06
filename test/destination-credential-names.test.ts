// Which header and query names carry a credential (isCredentialHeader / isCredentialQueryName,
// packages/logger/src/secret-names.ts) decides what destination views hide, what a PATCH
// moving the URL to another origin must send again, and what the audit log masks. Names
// written as one word (X-Authtoken, X-Webhooksecret), session names (X-Session, JSESSIONID,
// PHPSESSID, ?sid=) and URL-only credentials (?code= of Azure Functions, ?hapikey=) are
// credentials too; ordinary headers that only hold a short credential word's letters
// (X-Side-Channel, X-Author) stay shown.
import { startApi, type ApiHarness, VALIDATION, type ApiTenant as Tenant } from './api-harness';
import { destinationViews } from './support/destination-views';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('credname');
});
afterAll(async () => {
  await h.close();
});

const SECRET_HEADERS: Record<string, string> = {
  'X-Authtoken': 'NAME-SECRET-AUTHTOKEN',
  'X-Apitoken': 'NAME-SECRET-APITOKEN',
  'X-Accesstoken': 'NAME-SECRET-ACCESSTOKEN',
  'X-Webhooksecret': 'NAME-SECRET-WHSECRET',
  'X-Clientsecret': 'NAME-SECRET-CLIENTSECRET',
  'X-Sessiontoken': 'NAME-SECRET-SESSIONTOKEN',
  'X-Userpassword': 'NAME-SECRET-USERPASSWORD',
  'X-Session': 'NAME-SECRET-SESSION',
  JSESSIONID: 'NAME-SECRET-JSESSIONID',
  PHPSESSID: 'NAME-SECRET-PHPSESSID',
  sessionid: 'NAME-SECRET-SESSIONID',
  'X-Passwort': 'NAME-SECRET-PASSWORT',
  'X-Authz': 'NAME-SECRET-AUTHZ',
};
const PLAIN_HEADERS: Record<string, string> = { 'X-Request-Source': 'hookline', 'X-Side-Channel': 'blue', 'X-Author': 'ops', 'X-Env': 'prod' };
const SHOWN = { ...Object.fromEntries(Object.keys(SECRET_HEADERS).map((n) => [n, '[redacted]'])), ...PLAIN_HEADERS };

const QUERY_URL = 'https://fn.example.com/api/hook?apitoken=NAME-SECRET-Q-APITOKEN&authtoken=NAME-SECRET-Q-AUTHTOKEN&code=NAME-SECRET-Q-CODE&hapikey=NAME-SECRET-Q-HAPIKEY&sid=NAME-SECRET-Q-SID&sessionid=NAME-SECRET-Q-SESSIONID&page=2';
const QUERY_SHOWN = 'https://fn.example.com/api/hook?apitoken=****&authtoken=****&code=****&hapikey=****&sid=****&sessionid=****&page=2';

const row = async (id: string) => (await h.db.pool.query('SELECT url, config, updated_at FROM destinations WHERE id = $1', [id])).rows[0];
const fieldsOf = (body: any): string[] => (body.errors ?? []).map((e: { field: string }) => e.field).sort();

const views = (t: Tenant, id: string, made: unknown): Promise<any[]> => destinationViews(h, t, id, made);

async function create(t: Tenant, body: Record<string, unknown>): Promise<{ id: string; path: string; body: any }> {
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `n-${Math.random().toString(36).slice(2, 8)}`, ...body } });
  expect(made.status).toBe(201);
  return { id: made.body.id, path: `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, body: made.body };
}

describe('credential header names written as one word, and session names', () => {
  it('are "[redacted]" in the create answer, GET, the list and /v1/targets; ordinary headers are shown; all are stored', async () => {
    const t = await h.tenant();
    const d = await create(t, { url: 'https://a.example.com/hook', config: { headers: { ...SECRET_HEADERS, ...PLAIN_HEADERS } } });
    for (const view of await views(t, d.id, d.body)) {
      expect(view.config.headers).toEqual(SHOWN);
      expect(JSON.stringify(view)).not.toContain('NAME-SECRET');
    }
    expect((await row(d.id)).config.headers).toEqual({ ...SECRET_HEADERS, ...PLAIN_HEADERS });
  });

  it('are not carried to another origin by a PATCH that leaves config.headers out: 400 naming each, nothing written', async () => {
    const t = await h.tenant();
    const d = await create(t, { url: 'https://a.example.com/hook', config: { headers: { ...SECRET_HEADERS, ...PLAIN_HEADERS } } });
    const before = await row(d.id);
    const res = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://other.example.net/x' } });
    expect({ status: res.status, type: res.body.type, fields: fieldsOf(res.body) }).toEqual({
      status: 400,
      type: VALIDATION,
      fields: Object.keys(SECRET_HEADERS).map((n) => `config.headers.${n}`).sort(),
    });
    expect(JSON.stringify(res.body)).not.toContain('NAME-SECRET');
    expect(await row(d.id)).toEqual(before);
  });

  it('a PATCH sending the view back ("[redacted]") keeps the stored values; a new value replaces one', async () => {
    const t = await h.tenant();
    const d = await create(t, { url: 'https://a.example.com/hook', config: { headers: { ...SECRET_HEADERS, ...PLAIN_HEADERS } } });
    const back = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://a.example.com/v2', config: { headers: { ...SHOWN, 'X-Env': 'staging' } } } });
    expect(back.status).toBe(200);
    expect(back.body.config.headers).toEqual({ ...SHOWN, 'X-Env': 'staging' });
    expect((await row(d.id)).config.headers).toEqual({ ...SECRET_HEADERS, ...PLAIN_HEADERS, 'X-Env': 'staging' });

    const one = await h.call('PATCH', d.path, { key: t.apiKey, body: { config: { headers: { ...SHOWN, JSESSIONID: 'NEW-SESSION' } } } });
    expect(one.status).toBe(200);
    expect((await row(d.id)).config.headers).toMatchObject({ JSESSIONID: 'NEW-SESSION', 'X-Authtoken': 'NAME-SECRET-AUTHTOKEN' });
  });
});

describe('credential query names written as one word, session ids, ?code= and ?hapikey=', () => {
  it('are masked in every view and stored as given', async () => {
    const t = await h.tenant();
    const d = await create(t, { url: QUERY_URL });
    for (const view of await views(t, d.id, d.body)) {
      expect(view.url).toBe(QUERY_SHOWN);
      expect(JSON.stringify(view)).not.toContain('NAME-SECRET');
    }
    expect((await row(d.id)).url).toBe(QUERY_URL);
  });

  it('the masked URL sent back keeps them; sent to another origin it is refused', async () => {
    const t = await h.tenant();
    const d = await create(t, { url: QUERY_URL });
    const same = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: QUERY_SHOWN, name: 'kept' } });
    expect([same.status, same.body.url]).toEqual([200, QUERY_SHOWN]);
    expect((await row(d.id)).url).toBe(QUERY_URL);
    const moved = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: QUERY_SHOWN.replace('fn.example.com', 'attacker.test') } });
    expect([moved.status, fieldsOf(moved.body)]).toEqual([400, ['url']]);
    expect((await row(d.id)).url).toBe(QUERY_URL);
  });
});

describe('the audit log', () => {
  it('masks those query values, and hides those header values and a run-together secret config key (which is refused)', async () => {
    const t = await h.tenant();
    await create(t, { url: QUERY_URL, config: { headers: SECRET_HEADERS } });
    const refused = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, {
      key: t.apiKey,
      body: { name: 'refused', url: 'https://a.example.com/hook', config: { webhooksecret: 'NAME-SECRET-CONFIG', region: 'eu' } },
    });
    expect([refused.status, fieldsOf(refused.body)]).toEqual([400, ['config.webhooksecret']]);
    const audit = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs?action=destinations.create`, { key: t.apiKey });
    expect(audit.status).toBe(200);
    expect(audit.body.audit_logs).toHaveLength(2);
    expect(JSON.stringify(audit.body)).not.toContain('NAME-SECRET');
    const params = audit.body.audit_logs.map((a: { params: any }) => a.params.body);
    expect(params).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ url: QUERY_SHOWN }),
        expect.objectContaining({ config: { webhooksecret: '[redacted]', region: 'eu' } }),
      ]),
    );
  });
});
