// Brute-force protection of POST /auth/login: failures per email and per client address in
// a Redis sliding window. Every client is 127.0.0.1; TRUSTED_PROXIES makes loopback a
// trusted proxy, so X-Forwarded-For names the client each request stands for.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRedis, redisReady } from '@hookline/queues';
import { buildApp, type ApiApp } from '../services/api/src/app';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';
import { USER_BY_EMAIL } from '../services/api/src/auth/login.routes';
import { insertUser } from './api-fixtures';

const WINDOW_SECONDS = 900;
let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apilogin', {
    LOGIN_MAX_FAILURES_PER_ACCOUNT: '3',
    LOGIN_MAX_FAILURES_PER_IP: '6',
    LOGIN_FAILURE_WINDOW_SECONDS: String(WINDOW_SECONDS),
    TRUSTED_PROXIES: '127.0.0.0/8',
  });
});
afterAll(async () => {
  await h.close();
});

let n = 0;
/** A fresh client address and a user with a known password. */
async function fresh(): Promise<{ ip: string; email: string; password: string }> {
  n++;
  const t = await h.tenant();
  const email = `user${n}@example.test`;
  await insertUser(h, t.tenantId, email, 'right password');
  return { ip: `203.0.113.${n}`, email, password: 'right password' };
}

const login = (ip: string, email: string, password: string): Promise<ApiResponse> =>
  h.call('POST', '/auth/login', { body: { email, password }, headers: { 'x-forwarded-for': ip } });

function expectThrottled(res: ApiResponse): void {
  expect(res.status).toBe(429);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/rate-limit-exceeded', title: 'Rate Limit Exceeded', status: 429 });
  expect(res.body.instance).toBe(res.headers.get('x-request-id'));
  expect(Number.isInteger(res.body.retry_after_seconds)).toBe(true);
  expect(res.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
  expect(res.body.retry_after_seconds).toBeLessThanOrEqual(WINDOW_SECONDS);
  expect(res.headers.get('retry-after')).toBe(String(res.body.retry_after_seconds));
}

/** Another build of the api (other deps) on 127.0.0.1; `close` ends its connections too. */
async function listen(app: ApiApp): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('failed logins per account', () => {
  it('blocks the email after LOGIN_MAX_FAILURES_PER_ACCOUNT failures from any address, without checking the password', async () => {
    const u = await fresh();
    const statuses: number[] = [];
    for (const ip of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) statuses.push((await login(ip, u.email, 'wrong')).status);
    expect(statuses).toEqual([401, 401, 401]);
    // The right password from a new address: refused before it is looked at.
    expectThrottled(await login('198.51.100.4', u.email, u.password));
    // Other accounts, from the same address, are not affected.
    const other = await fresh();
    expect((await login('198.51.100.4', other.email, other.password)).status).toBe(200);
  });

  it('counts an unknown email like a known one, and the email in any case and spacing', async () => {
    const ip = (await fresh()).ip;
    for (const email of ['Ghost@Example.test', 'ghost@example.test', ' GHOST@example.TEST ']) expect((await login(ip, email, 'x')).status).toBe(401);
    expectThrottled(await login(ip, 'ghost@example.test', 'x'));
  });

  it('clears the email after a successful login', async () => {
    const u = await fresh();
    expect([(await login(u.ip, u.email, 'wrong')).status, (await login(u.ip, u.email, 'wrong')).status]).toEqual([401, 401]);
    expect((await login(u.ip, u.email, u.password)).status).toBe(200);
    // Two failures again: without the reset the second would be the fourth and refused.
    expect([(await login(u.ip, u.email, 'wrong')).status, (await login(u.ip, u.email, 'wrong')).status]).toEqual([401, 401]);
  });

  it('does not count bodies refused as invalid', async () => {
    const u = await fresh();
    for (let i = 0; i < 5; i++) {
      const res = await h.call('POST', '/auth/login', { body: { email: u.email }, headers: { 'x-forwarded-for': u.ip } });
      expect(res.status).toBe(400);
    }
    expect((await login(u.ip, u.email, u.password)).status).toBe(200);
  });
});

describe('failed logins per client address', () => {
  it('blocks the address after LOGIN_MAX_FAILURES_PER_IP failures across emails; other addresses still log in', async () => {
    const u = await fresh();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await login(u.ip, `spray${n}-${i}@example.test`, 'guess')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    expectThrottled(await login(u.ip, u.email, u.password));
    expect((await login('192.0.2.200', u.email, u.password)).status).toBe(200);
  });

  it('does not count successful logins', async () => {
    const u = await fresh();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await login(u.ip, u.email, u.password)).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
  });

  it('counts an IPv6 client by its /64', async () => {
    const ip = '2001:db8:1:2::1';
    for (let i = 0; i < 6; i++) expect((await login(i % 2 ? ip : `2001:db8:1:2:${i}::9`, `v6-${i}@example.test`, 'guess')).status).toBe(401);
    const u = await fresh();
    expectThrottled(await login('2001:db8:1:2:ffff::1', u.email, u.password));
    expect((await login('2001:db8:1:3::1', u.email, u.password)).status).toBe(200);
  });

  it('believes X-Forwarded-For only from TRUSTED_PROXIES', async () => {
    // The same api without trusted proxies: every request is 127.0.0.1, whatever it claims.
    const config = { ...h.api.context.config, trustedProxies: [] };
    const { url, close } = await listen(buildApp({ ...h.api.context, config }));
    try {
      const post = (email: string, password: string, i: number) =>
        fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': `192.0.2.${i}` }, body: JSON.stringify({ email, password }) });
      for (let i = 0; i < 6; i++) expect((await post(`spoof-${i}@example.test`, 'guess', i)).status).toBe(401);
      const u = await fresh();
      expect((await post(u.email, u.password, 99)).status).toBe(429);
    } finally {
      await close();
    }
  });
});

describe('shared state and failure modes', () => {
  it('is shared by every api replica (the counters live in Redis)', async () => {
    const u = await fresh();
    const other = await h.replica();
    const post = (base: string) =>
      fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': u.ip }, body: JSON.stringify({ email: u.email, password: 'wrong' }) }).then((r) => r.status);
    expect([await post(h.url), await post(other), await post(h.url)]).toEqual([401, 401, 401]);
    expect(await post(other)).toBe(429);
  });

  it('fails open while Redis is unreachable, like the API rate limiter', async () => {
    // A client whose connection is gone: every command fails at once, as during an outage.
    const dead = createRedis(h.api.context.config.REDIS_URL, 'producer');
    expect(await redisReady(dead, 20_000)).toBe(true);
    dead.disconnect();
    const { url, close } = await listen(buildApp({ ...h.api.context, redis: dead }));
    try {
      const u = await fresh();
      const post = (password: string) =>
        fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: u.email, password }) }).then((r) => r.status);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push(await post('wrong'));
      expect(statuses).toEqual([401, 401, 401, 401, 401]);
      expect(await post(u.password)).toBe(200);
    } finally {
      await close();
    }
  });

  it('documents the 429 on POST /auth/login', async () => {
    const op = (await h.call('GET', '/v1/openapi.json')).body.paths['/auth/login'].post;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '415', '429']));
    expect(op.description).toMatch(/LOGIN_MAX_FAILURES_PER_ACCOUNT/);
  });
});

describe('the email is compared exactly (any case), never as a pattern', () => {
  it('refuses wildcard spellings, so they neither log in nor get a failure budget of their own', async () => {
    const u = await fresh();
    const [local, domain] = u.email.split('@') as [string, string];
    for (const pattern of ['%%%', `${local.slice(0, -1)}_@${domain}`, `%@${domain}`, `${local}@example.tes_`]) {
      expect((await login(u.ip, pattern, u.password)).status).toBe(401);
    }
    // Case does not matter; surrounding spaces neither.
    expect((await login(u.ip, ` ${u.email.toUpperCase()} `, u.password)).status).toBe(200);
  });

  it('checks each user against its own row: john_doe@ is not johnxdoe@ of another tenant', async () => {
    const a = await h.tenant();
    const b = await h.tenant();
    const stamp = Date.now();
    await insertUser(h, a.tenantId, `johnxdoe${stamp}@corp.test`, 'x password');
    await insertUser(h, b.tenantId, `john_doe${stamp}@corp.test`, 'underscore password');
    const res = await login('198.51.100.77', `john_doe${stamp}@corp.test`, 'underscore password');
    expect([res.status, res.body.tenant_id]).toEqual([200, b.tenantId]);
    expect((await login('198.51.100.77', `john_doe${stamp}@corp.test`, 'x password')).status).toBe(401);
  });
});

describe('the login lookup', () => {
  it('can use the lower(email) index instead of reading every user', async () => {
    const client = await h.db.pool.connect();
    try {
      await client.query('BEGIN');
      // Tiny test tables favour a scan: forbid it, so the plan shows whether an index serves the query at all.
      await client.query('SET LOCAL enable_seqscan = off');
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${USER_BY_EMAIL}`, ['a@example.test']);
      expect(JSON.stringify(rows[0]['QUERY PLAN'])).toContain('users_lower_email_idx');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
