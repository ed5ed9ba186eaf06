// A user's role decides the scopes of their sessions (packages/signing/src/roles.ts):
// owner/admin everything, member all but the credential-minting writes, viewer read:* only,
// an unknown role nothing. `pnpm admin add-user` creates users with a role.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { newId } from '@hookline/db';
import { hashPassword } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';

jest.setTimeout(60_000);

const PASSWORD = 'correct horse battery';
let h: ApiHarness;
let passwordHash: string;
beforeAll(async () => {
  h = await startApi('apiroles', { JWT_SECRET: 'test-roles-secret-0123456789' });
  passwordHash = await hashPassword(PASSWORD);
});
afterAll(async () => {
  await h.close();
});

const email = (role: string): string => `${role}-${randomBytes(4).toString('hex')}@roles.test`;

async function userWithRole(tenantId: string, role: string): Promise<string> {
  const address = email(role);
  await h.db.pool.query('INSERT INTO users (id, tenant_id, email, password_hash, role) VALUES ($1, $2, $3, $4, $5)', [newId('usr'), tenantId, address, passwordHash, role]);
  return address;
}

async function login(address: string, password = PASSWORD): Promise<string> {
  const res = await h.call('POST', '/auth/login', { body: { email: address, password } });
  expect(res.status).toBe(200);
  return res.body.token as string;
}

/** What each kind of request answers for this session: a read, a config write, a key issue. */
async function answers(tenantId: string, token: string): Promise<{ read: number; write: number; mint: number }> {
  const headers = { authorization: `Bearer ${token}` };
  const read = (await h.call('GET', `/v1/tenants/${tenantId}/ingesters`, { headers })).status;
  const write = (await h.call('POST', `/v1/tenants/${tenantId}/destinations`, { headers, body: { name: `d-${randomBytes(3).toString('hex')}`, url: 'https://example.com/hook' } })).status;
  const mint = (await h.call('POST', `/v1/tenants/${tenantId}/api-keys`, { headers, body: { name: 'k', scopes: ['read:ingesters'] } })).status;
  return { read, write, mint };
}

it('owner and admin may do everything, member all but issue credentials, viewer only read, an unknown role nothing', async () => {
  const t = await h.tenant();
  const got: Record<string, unknown> = {};
  for (const role of ['owner', 'admin', 'member', 'viewer', 'auditor']) got[role] = await answers(t.tenantId, await login(await userWithRole(t.tenantId, role)));
  expect(got).toEqual({
    owner: { read: 200, write: 201, mint: 201 },
    admin: { read: 200, write: 201, mint: 201 },
    member: { read: 200, write: 201, mint: 403 },
    viewer: { read: 200, write: 403, mint: 403 },
    auditor: { read: 403, write: 403, mint: 403 },
  });
});

it('a refusal names the scope the role lacks, and writes nothing', async () => {
  const t = await h.tenant();
  const token = await login(await userWithRole(t.tenantId, 'viewer'));
  const before = await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId]);
  const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { headers: { authorization: `Bearer ${token}` }, body: { name: 'x', url: 'https://example.com/h' } });
  expect([res.status, res.body.type, res.body.required_scope, res.body.instance]).toEqual([403, expect.stringMatching(/insufficient-scope$/), 'write:destinations', res.headers.get('x-request-id')]);
  const after = await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId]);
  expect(after.rows[0].n).toBe(before.rows[0].n);
});

it('the role is read on each request: a changed role applies to tokens already issued', async () => {
  const t = await h.tenant();
  const address = await userWithRole(t.tenantId, 'viewer');
  const token = await login(address);
  expect((await answers(t.tenantId, token)).write).toBe(403);
  await h.db.pool.query(`UPDATE users SET role = 'member' WHERE email = $1`, [address]);
  expect((await answers(t.tenantId, token)).write).toBe(201);
  await h.db.pool.query(`UPDATE users SET role = 'viewer' WHERE email = $1`, [address]);
  expect((await answers(t.tenantId, token)).write).toBe(403);
});

const TSX = resolve(__dirname, '..', 'node_modules/.bin/tsx');
function admin(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn(TSX, [resolve(__dirname, '..', 'scripts/admin.ts'), ...args], { env: { ...process.env, DATABASE_URL: h.db.url, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('close', (code) => done({ code, out, err }));
  });
}

it('pnpm admin add-user: a user with a role, audited; bad input changes nothing', async () => {
  const t = await h.tenant();
  const address = email('cli');
  const r = await admin(['add-user', '--tenant', t.tenantId, '--email', address.toUpperCase(), '--role', 'viewer']);
  expect(r.code).toBe(0);
  const out = JSON.parse(r.out);
  expect(out).toMatchObject({ tenant_id: t.tenantId, user: { id: expect.stringMatching(/^usr_/), email: address, role: 'viewer', password: expect.any(String) } });
  expect(await answers(t.tenantId, await login(address, out.user.password))).toEqual({ read: 200, write: 403, mint: 403 });
  const audit = await h.db.pool.query(`SELECT actor, action, resource_id, params FROM audit_logs WHERE tenant_id = $1 AND action = 'user.create'`, [t.tenantId]);
  expect(audit.rows).toEqual([{ actor: 'admin-cli', action: 'user.create', resource_id: out.user.id, params: { email: address, role: 'viewer' } }]);

  const count = async (): Promise<number> => (await h.db.pool.query('SELECT count(*)::int AS n FROM users')).rows[0].n;
  const n = await count();
  const bad = await admin(['add-user', '--tenant', 'nope', '--email', 'x', '--role', 'root']);
  expect([bad.code, bad.err]).toEqual([1, expect.stringContaining('--tenant must be a tenant id (ten_…); --email must be an email address; --role must be one of owner, admin, member, viewer')]);
  const ghost = await admin(['add-user', '--tenant', 'ten_missing', '--email', email('ghost'), '--role', 'member']);
  expect([ghost.code, ghost.err]).toEqual([1, expect.stringContaining('no tenant ten_missing')]);
  const dup = await admin(['add-user', '--tenant', t.tenantId, '--email', address, '--role', 'owner'], { HOOKLINE_ADMIN_PASSWORD: 'operator-chosen-pw' });
  expect([dup.code, dup.err]).toEqual([1, expect.stringContaining(`a user with email ${address} already exists`)]);
  expect(await count()).toBe(n);

  // The operator's own password is not printed back.
  const own = await admin(['add-user', '--tenant', t.tenantId, '--email', email('own'), '--role', 'admin'], { HOOKLINE_ADMIN_PASSWORD: 'operator-chosen-pw' });
  expect(own.code).toBe(0);
  expect(own.out).not.toContain('operator-chosen-pw');
  expect(JSON.parse(own.out).user).toEqual({ id: expect.stringMatching(/^usr_/), email: expect.stringMatching(/^own-/), role: 'admin' });
});
