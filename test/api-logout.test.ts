import { createHmac } from 'node:crypto';
import { newId } from '@hookline/db';
import { hashPassword } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';

const SECRET = 'test-logout-secret-0123456789';
let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apilogout', { JWT_SECRET: SECRET, JWT_EXPIRES_IN: '15m' });
});
afterAll(async () => {
  await h.close();
});

const PASSWORD = 'correct horse';
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
/** A token as login would sign it, with the claims given. */
function sign(payload: object): string {
  const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}

async function user(tenantId: string, email: string): Promise<string> {
  const id = newId('usr');
  await h.db.pool.query('INSERT INTO users (id, tenant_id, email, password_hash) VALUES ($1, $2, $3, $4)', [id, tenantId, email, await hashPassword(PASSWORD)]);
  return id;
}

async function login(email: string): Promise<string> {
  const res = await h.call('POST', '/auth/login', { body: { email, password: PASSWORD } });
  expect(res.status).toBe(200);
  return res.body.token;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const logout = (token: string, path = '/auth/logout') => h.call('POST', path, { headers: bearer(token) });
const works = async (tenantId: string, token: string) => (await h.call('GET', `/v1/tenants/${tenantId}/ingesters`, { headers: bearer(token) })).status;

async function validAfterMs(uid: string): Promise<number> {
  const { rows } = await h.db.pool.query(`SELECT sessions_valid_after FROM users WHERE id = $1`, [uid]);
  return (rows[0].sessions_valid_after as Date).getTime();
}

describe('POST /auth/logout: log out everywhere', () => {
  it("ends the token used and every other session of the user, not another user's; audited as auth.logout", async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'alice@example.test');
    await user(t.tenantId, 'bob@example.test');
    const [used, other, bobs] = [await login('alice@example.test'), await login('alice@example.test'), await login('bob@example.test')];
    expect([await works(t.tenantId, used), await works(t.tenantId, other)]).toEqual([200, 200]);

    const res = await logout(used);
    expect([res.status, res.body]).toEqual([204, undefined]);
    for (const token of [used, other]) {
      const refused = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { headers: bearer(token) });
      expect([refused.status, refused.body.type, refused.body.detail]).toEqual([401, expect.stringMatching(/\/unauthorized$/), 'The session token is invalid or expired.']);
    }
    expect(await works(t.tenantId, bobs)).toBe(200);

    // The /v1 path is the same route, audited under the same action.
    const again = await login('alice@example.test');
    expect((await logout(again, '/v1/auth/logout')).status).toBe(204);
    expect(await works(t.tenantId, again)).toBe(401);
    const { rows } = await h.db.pool.query(`SELECT actor, resource_id, outcome, request_id FROM audit_logs WHERE tenant_id = $1 AND action = 'auth.logout' ORDER BY created_at, id`, [t.tenantId]);
    expect(rows.map((r) => [r.actor, r.resource_id, r.outcome])).toEqual([
      [`user:${uid}`, uid, 'success:204'],
      [`user:${uid}`, uid, 'success:204'],
    ]);
  });

  it('lets a login right after a logout work at once, even within the same millisecond', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'quick@example.test');
    let token = await login('quick@example.test');
    for (let i = 0; i < 5; i++) {
      expect((await logout(token)).status).toBe(204);
      token = await login('quick@example.test');
      expect(await works(t.tenantId, token)).toBe(200);
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
      expect(claims.iat_ms).toBeGreaterThan(await validAfterMs(uid));
    }
  });

  it('refuses a token issued at or before the logout: by iat_ms, or for a token without it by its whole second', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'clock@example.test');
    expect((await logout(await login('clock@example.test'))).status).toBe(204);
    const va = await validAfterMs(uid);
    const iat = Math.floor(va / 1000);
    const base = { sub: uid, tid: t.tenantId, typ: 'session', iat, exp: iat + 600 };
    expect(await works(t.tenantId, sign({ ...base, iat_ms: va }))).toBe(401);
    expect(await works(t.tenantId, sign({ ...base, iat_ms: va + 1 }))).toBe(200);
    // Without iat_ms a token of the logout's second may predate it: refused. The next second is after it.
    expect(await works(t.tenantId, sign(base))).toBe(401);
    expect(await works(t.tenantId, sign({ ...base, iat: iat + 1, exp: iat + 601 }))).toBe(200);
    expect(await works(t.tenantId, sign({ ...base, iat_ms: 'later' }))).toBe(401);
  });

  it('is refused to an API key (403 permission-denied naming the key), which logs nobody out', async () => {
    const t = await h.tenant();
    await user(t.tenantId, 'keyed@example.test');
    const session = await login('keyed@example.test');
    for (const headers of [{ 'x-api-key': t.apiKey }, bearer(t.apiKey)]) {
      const res = await h.call('POST', '/v1/auth/logout', { headers });
      expect(res.body).toMatchObject({ type: expect.stringMatching(/\/permission-denied$/), status: 403, resource_id: t.apiKeyId, instance: res.headers.get('x-request-id') });
    }
    expect(await works(t.tenantId, session)).toBe(200);
    const { rows } = await h.db.pool.query(`SELECT actor, outcome FROM audit_logs WHERE tenant_id = $1 AND action = 'auth.logout'`, [t.tenantId]);
    expect(rows.map((r) => [r.actor, r.outcome])).toEqual([
      [`api_key:${t.apiKeyId}`, 'client_error:403'],
      [`api_key:${t.apiKeyId}`, 'client_error:403'],
    ]);
    // Without any credential: 401 as every credentialed route.
    expect((await h.call('POST', '/auth/logout')).status).toBe(401);
  });

  it('twice: the logged-out token cannot log out again (401); a new session can, and the stamp only moves forward', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'twice@example.test');
    const first = await login('twice@example.test');
    expect((await logout(first)).status).toBe(204);
    const stamp = await validAfterMs(uid);
    const again = await logout(first);
    expect([again.status, again.body.type]).toEqual([401, expect.stringMatching(/\/unauthorized$/)]);
    expect(await validAfterMs(uid)).toBe(stamp);
    const second = await login('twice@example.test');
    expect((await logout(second)).status).toBe(204);
    expect(await validAfterMs(uid)).toBeGreaterThan(stamp);
    expect(await works(t.tenantId, second)).toBe(401);
  });
});

describe('OpenAPI', () => {
  it('documents POST /auth/logout and /v1/auth/logout: 204 without a body, 401 and 403 as problems, under Authentication', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    for (const [path, id] of [['/auth/logout', 'auth.logout'], ['/v1/auth/logout', 'auth.logoutV1']] as const) {
      const op = doc.paths[path]?.post;
      expect({ path, id: op?.operationId, tags: op?.tags, body: op?.requestBody }).toEqual({ path, id, tags: ['Authentication'], body: undefined });
      expect(op.responses['204']).toEqual({ description: 'No content' });
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '429']));
      expect(op.description).toMatch(/permission-denied/);
    }
  });
});
