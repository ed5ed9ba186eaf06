// hookline_db_errors_total{service="api"} counts the api's PostgreSQL errors on every
// connection pool it has, Prisma's included (services/api/src/main.ts): most of the api's
// reads and writes go through Prisma, so with PostgreSQL gone a request that fails there
// must count, not only the raw pool's statements. The api runs as its own process (as
// shipped), its PostgreSQL behind a loopback TCP relay that the test cuts.
import { createTestDatabase, flushPrefix, seedTenant, startService, uniquePrefix, waitFor, type SeededTenant, type ServiceProcess, type TestDatabase } from '@hookline/testing';
import { startTcpProxy, type TcpProxy } from '../services/ingest/src/testing/tcp-proxy';

jest.setTimeout(120_000);

let db: TestDatabase;
let proxy: TcpProxy;
let api: ServiceProcess;
let tenant: SeededTenant;
const prefix = uniquePrefix('apidberr');

beforeAll(async () => {
  db = await createTestDatabase('apidberr');
  const target = new URL(db.url);
  proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  const viaProxy = new URL(db.url);
  viaProxy.port = String(proxy.port);
  tenant = await seedTenant(db.pool);
  api = await startService('api', {
    DATABASE_URL: viaProxy.toString(),
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    SECRETS_KEY: 'test-secrets-key-0123456789abcdef',
    INGEST_PUBLIC_URL: 'http://127.0.0.1:9999',
    DB_POOL_MAX: '2',
    // No sealer pass (raw pool) during the test: only the requests' statements run.
    EVIDENCE_SEAL_INTERVAL_MS: '3600000',
  });
});
afterAll(async () => {
  await api?.stop('SIGKILL');
  await proxy?.cut();
  await flushPrefix(prefix);
  await db?.drop();
});

/** hookline_db_errors_total of the api, all operations. */
async function dbErrors(): Promise<number> {
  const text = await (await fetch(`${api.url}/metrics`)).text();
  return [...text.matchAll(/^hookline_db_errors_total\{[^}]*\} ([0-9.e+]+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

const listIngesters = () => fetch(`${api.url}/v1/tenants/${tenant.tenantId}/ingesters`, { headers: { 'x-api-key': tenant.apiKey } });

test('a Prisma-backed request that fails on PostgreSQL counts in hookline_db_errors_total{service="api"}; one that succeeds does not', async () => {
  // API-key lookup and the list: both through Prisma.
  const before = await dbErrors();
  expect((await listIngesters()).status).toBe(200);
  expect(await dbErrors()).toBe(before);

  await proxy.cut();
  // Pooled connections dropped by the cut may count as `connection` errors: wait until quiet.
  let settled = await dbErrors();
  await waitFor(
    async () => {
      await new Promise((r) => setTimeout(r, 500));
      const now = await dbErrors();
      const quiet = now === settled;
      settled = now;
      return quiet;
    },
    { timeoutMs: 20_000, what: 'the error count to settle after the cut' },
  );

  for (let i = 0; i < 3; i++) expect((await listIngesters()).status).toBe(503);
  expect((await dbErrors()) - settled).toBeGreaterThanOrEqual(3);
  expect(await (await fetch(`${api.url}/metrics`)).text()).toMatch(/^hookline_db_errors_total\{operation="connect",service="api"\} [1-9]/m);
});
