import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { createTestDatabase, flushPrefix, seedTenant, shippedCommand, startService, uniquePrefix, waitFor, type ServiceProcess, type TestDatabase } from '@hookline/testing';
import { newId } from '@hookline/db';

const ROOT = resolve(__dirname, '..');
let db: TestDatabase;
const prefix = uniquePrefix('ingproc');

beforeAll(async () => {
  db = await createTestDatabase('ingproc');
});
afterAll(async () => {
  await flushPrefix(prefix);
  await db.drop();
});

const env = (): Record<string, string> => ({ DATABASE_URL: db.url, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', QUEUE_PREFIX: prefix, SHUTDOWN_TIMEOUT_MS: '5000' });

/** Sends a request's head and part of its body, then the rest when asked; resolves the raw answer. */
function slowPost(port: number, path: string, body: string): { finish(): void; answer: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  const answer = new Promise<string>((res, rej) => {
    socket.on('data', (d) => (data += d.toString()));
    socket.on('end', () => res(data));
    socket.on('error', rej);
  });
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 3)}`);
  return { finish: () => socket.write(body.slice(3)), answer };
}

test('main.ts: serves, and on SIGTERM stops accepting, finishes the open request, exits 0', async () => {
  const { tenantId } = await seedTenant(db.pool);
  const ingesterId = newId('ing');
  await db.pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ($1, $2, 'p', 'generic', now())`, [ingesterId, tenantId]);
  const svc: ServiceProcess = await startService('ingest', env());
  try {
    const ok = await fetch(`${svc.url}/in/${ingesterId}`, { method: 'POST', body: '{"n":1}' });
    expect(ok.status).toBe(202);

    const open = slowPost(svc.port, `/in/${ingesterId}`, '{"n":"in flight"}');
    await new Promise((r) => setTimeout(r, 100));
    const exited = svc.stop('SIGTERM');
    // Once the listener is closed a new connection is refused...
    await waitFor(async () => (await fetch(`${svc.url}/healthz`).then(() => false, () => true)), { timeoutMs: 5000, what: 'the listener to close' });
    // ...but the request already in progress is completed and committed.
    open.finish();
    const raw = await open.answer;
    expect(raw).toMatch(/^HTTP\/1\.1 202/);
    expect(await exited).toBe(0);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM events WHERE ingester_id = $1`, [ingesterId]);
    expect(rows[0].n).toBe(2);
  } finally {
    await svc.stop('SIGKILL');
  }
});

test.each([
  ['TRUSTED_PROXIES', 'not-a-cidr'],
  ['PORT', 'eighty'],
])('a bad %s stops the process with a message naming it', async (name, value) => {
  const shipped = await shippedCommand('services/ingest/src/main.ts');
  const child = spawn(shipped.command, shipped.args, {
    cwd: ROOT,
    env: { ...process.env, ...shipped.env, ...env(), PORT: '0', [name]: value },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  expect(code).toBe(1);
  expect(err).toContain(name);
});
