// PostgreSQL unreachable is the service's temporary state, not a fault of the request: the
// control API answers 503 service-unavailable with Retry-After and the request id (SPEC:
// "temporarily unavailable"), not 500. The api here reads through a pool and Prisma client
// pointed at a loopback port nothing listens on (what a stopped PostgreSQL looks like).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPool, createPrisma, type Pool, type PrismaClient } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { freePort, uniquePrefix, flushPrefix } from '@hookline/testing';
import { buildApp } from '../services/api/src/app';
import { loadApiConfig } from '../services/api/src/config';

let server: Server;
let url: string;
let pool: Pool;
let prisma: PrismaClient;
let redis: Redis;
let producer: Producer;
const prefix = uniquePrefix('apidbdown');

beforeAll(async () => {
  const deadDb = `postgresql://postgres@127.0.0.1:${await freePort()}/test`;
  const config = loadApiConfig({ DATABASE_URL: deadDb, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', QUEUE_PREFIX: prefix, INGEST_PUBLIC_URL: 'http://127.0.0.1:9999' });
  pool = createPool(deadDb, 2);
  prisma = createPrisma(deadDb, 2);
  redis = createRedis(config.REDIS_URL, 'producer');
  producer = createProducer(redis, prefix);
  const logger = createLogger('api-test', 'error');
  logger.silent = true;
  const api = buildApp({ prisma, pool, redis, producer, config, logger });
  server = await new Promise((resolve) => {
    const s = api.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await producer.close();
  await flushPrefix(prefix);
  redis.disconnect();
  await prisma.$disconnect();
  await pool.end();
});

async function expectUnavailable(res: Response): Promise<void> {
  const body = (await res.json()) as Record<string, unknown>;
  expect({ status: res.status, type: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 503, type: expect.stringContaining('application/problem+json'), retryAfter: '2' });
  expect(body).toEqual(expect.objectContaining({ type: expect.stringMatching(/\/service-unavailable$/), status: 503, title: 'Service Unavailable', instance: res.headers.get('x-request-id') }));
  expect(String(body['detail'])).toMatch(/temporarily unavailable/);
  // Nothing of the driver's error reaches the client.
  expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|P1001|postgres/i);
}

test('a read with an API key (its lookup fails) answers 503 with Retry-After and the request id', async () => {
  await expectUnavailable(await fetch(`${url}/v1/tenants/ten_x/ingesters`, { headers: { 'x-api-key': 'hk_test_abcdefghijklmnopqrstuvwxyz0123456789' } }));
});

test('a login (Prisma) and a write under an Idempotency-Key answer 503 as well', async () => {
  await expectUnavailable(await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.test', password: 'correct horse battery staple' }) }));
  await expectUnavailable(
    await fetch(`${url}/v1/tenants/ten_x/ingesters`, {
      method: 'POST',
      headers: { 'x-api-key': 'hk_test_abcdefghijklmnopqrstuvwxyz0123456789', 'content-type': 'application/json', 'idempotency-key': 'k1' },
      body: JSON.stringify({ name: 'x', provider: 'generic' }),
    }),
  );
});
