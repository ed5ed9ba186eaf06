import { createHmac } from 'node:crypto';
import { newId } from '@hookline/db';
import { hashPassword } from '@hookline/signing';
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';

const SECRET = 'test-jwt-secret-0123456789';
let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apijwt', { JWT_SECRET: SECRET, JWT_EXPIRES_IN: '15m' });
});
afterAll(async () => {
  await h.close();
});

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
function sign(header: object, payload: object, key = SECRET, alg: 'sha256' | 'sha512' = 'sha256'): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac(alg, key).update(input).digest('base64url')}`;
}

async function user(tenantId: string, email: string, password: string): Promise<string> {
  const id = newId('usr');
  await h.db.pool.query('INSERT INTO users (id, tenant_id, email, password_hash) VALUES ($1, $2, $3, $4)', [id, tenantId, email, await hashPassword(password)]);
  return id;
}

describe('POST /auth/login and session JWTs', () => {
  it('answers under the /v1 base too (SPEC: backend base {base_url}/v1), the same route: same throttle and answers', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'v1@example.test', 'correct horse');
    const res = await h.call('POST', '/v1/auth/login', { body: { email: 'v1@example.test', password: 'correct horse' } });
    expect([res.status, res.body.user_id, res.body.token_type]).toEqual([200, uid, 'Bearer']);
    const me = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { headers: { authorization: `Bearer ${res.body.token}` } });
    expect(me.status).toBe(200);
    const wrong = await h.call('POST', '/v1/auth/login', { body: { email: 'v1@example.test', password: 'wrong' } });
    expect([wrong.status, wrong.body.type]).toEqual([401, expect.stringMatching(/\/unauthorized$/)]);
  });

  it('issues a tenant-scoped HS256 token that works as a Bearer credential', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'Owner@Example.test', 'correct horse');
    const res = await h.call('POST', '/auth/login', { body: { email: 'owner@example.test', password: 'correct horse' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', tenant_id: t.tenantId, user_id: uid });
    const [header, payload] = res.body.token.split('.').slice(0, 2).map((p: string) => JSON.parse(Buffer.from(p, 'base64url').toString()));
    expect(header.alg).toBe('HS256');
    expect(payload).toMatchObject({ sub: uid, tid: t.tenantId, typ: 'session' });
    expect(payload.exp - payload.iat).toBe(15 * 60);
    expect(new Date(res.body.expires_at).getTime()).toBe(payload.exp * 1000);

    const auth = { authorization: `Bearer ${res.body.token}` };
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { headers: auth, body: { name: 'via-jwt', provider: 'generic' } });
    expect(made.status).toBe(201);
    const other = await h.tenant();
    expect((await h.call('GET', `/v1/tenants/${other.tenantId}/ingesters`, { headers: auth })).status).toBe(404);
    // The audit log names the user.
    const actors = await waitFor(async () => {
      const { rows } = await h.db.pool.query(`SELECT actor FROM audit_logs WHERE tenant_id = $1 AND action = 'ingesters.create'`, [t.tenantId]);
      return rows.length ? rows.map((r) => r.actor) : null;
    });
    expect(actors).toEqual([`user:${uid}`]);
  });

  it('refuses a wrong password and an unknown email alike', async () => {
    const t = await h.tenant();
    await user(t.tenantId, 'a@example.test', 'right');
    const wrong = await h.call('POST', '/auth/login', { body: { email: 'a@example.test', password: 'wrong' } });
    const unknown = await h.call('POST', '/auth/login', { body: { email: 'nobody@example.test', password: 'right' } });
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(wrong.body.detail).toBe(unknown.body.detail);
    expect((await h.call('POST', '/auth/login', { body: { email: 'a@example.test' } })).body.errors).toEqual([{ field: 'password', message: 'is required' }]);
  });

  it('refuses expired, tampered, alg=none and wrongly signed tokens', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'b@example.test', 'pw');
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: uid, tid: t.tenantId, typ: 'session', iat: now };
    const path = `/v1/tenants/${t.tenantId}/ingesters`;
    const use = (token: string) => h.call('GET', path, { headers: { authorization: `Bearer ${token}` } });

    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp: now + 60 }))).status).toBe(200);
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 120, exp: now - 60 }))).status).toBe(401);

    const good = sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp: now + 60 });
    const [hd, , sig] = good.split('.');
    const other = await h.tenant();
    expect((await use(`${hd}.${b64({ ...claims, tid: other.tenantId, exp: now + 60 })}.${sig}`)).status).toBe(401);
    expect((await use(`${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, exp: now + 60 })}.`)).status).toBe(401);
    expect((await use(sign({ alg: 'HS512', typ: 'JWT' }, { ...claims, exp: now + 60 }, SECRET, 'sha512'))).status).toBe(401);
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp: now + 60 }, 'another-secret-entirely'))).status).toBe(401);
    // Only tokens login could have issued: with exp and iat, at most JWT_EXPIRES_IN (15m)
    // old whatever exp says, and not issued in the future.
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, claims))).status).toBe(401);
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { sub: uid, tid: t.tenantId, typ: 'session', exp: now + 60 }))).status).toBe(401);
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 16 * 60, exp: now + 3600 }))).status).toBe(401);
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now + 3600, exp: now + 7200 }))).status).toBe(401);
    expect((await use(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 14 * 60, exp: now + 60 }))).status).toBe(200);
    // A token whose user no longer exists is refused.
    await h.db.pool.query('DELETE FROM users WHERE id = $1', [uid]);
    expect((await use(good)).status).toBe(401);
  });
});

describe('logins are audited in the user\'s tenant', () => {
  it('a success and a wrong password each leave one auth.login row (actor the user, never the email or password); an unknown email none', async () => {
    const t = await h.tenant();
    const uid = await user(t.tenantId, 'audited@example.test', 'correct horse');
    expect((await h.call('POST', '/auth/login', { body: { email: 'audited@example.test', password: 'wrong horse' } })).status).toBe(401);
    const ok = await h.call('POST', '/v1/auth/login', { body: { email: 'Audited@Example.test', password: 'correct horse' } });
    expect(ok.status).toBe(200);
    expect((await h.call('POST', '/auth/login', { body: { email: 'nobody-audited@example.test', password: 'x' } })).status).toBe(401);
    const { rows } = await h.db.pool.query(`SELECT actor, action, resource_id, outcome, request_id, params::text AS params FROM audit_logs WHERE tenant_id = $1 AND action = 'auth.login' ORDER BY created_at, id`, [t.tenantId]);
    expect(rows.map((r) => [r.actor, r.resource_id, r.outcome])).toEqual([
      [`user:${uid}`, uid, 'client_error:401'],
      [`user:${uid}`, uid, 'success:200'],
    ]);
    expect(rows[1].request_id).toBe(ok.headers.get('x-request-id'));
    expect(JSON.stringify(rows)).not.toMatch(/horse|audited@/i);
  });
});
