// A client that sends its headers and part of a body, then stalls, must not hold the api's
// memory (express.json buffers up to API_BODY_LIMIT before authentication): the api's HTTP
// server (services/api/src/main.ts) answers 408 and closes the connection once
// API_REQUEST_TIMEOUT_MS has passed without the whole request, and API_HEADERS_TIMEOUT_MS
// bounds the headers alike. Node's defaults (300 s and 60 s) let 400 such connections hold
// ~400 MB. A request received whole whose answer takes longer (an edge long-poll) is not
// cut: requestTimeout covers receiving the request, not the response. The api runs as its
// own process, as shipped (run `pnpm -s build` first).
import { connect } from 'node:net';
import { createTestDatabase, flushPrefix, seedTenant, startService, uniquePrefix, type SeededTenant, type ServiceProcess, type TestDatabase } from '@hookline/testing';
import { loadApiConfig } from '../services/api/src/config';
import { edgePost, insertCluster, SECRETS_KEY } from './edge-fixtures';

jest.setTimeout(60_000);

let db: TestDatabase;
let api: ServiceProcess;
let tenant: SeededTenant;
const prefix = uniquePrefix('apislow');

beforeAll(async () => {
  db = await createTestDatabase('apislow');
  tenant = await seedTenant(db.pool);
  api = await startService('api', {
    DATABASE_URL: db.url,
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    SECRETS_KEY,
    INGEST_PUBLIC_URL: 'http://127.0.0.1:9999',
    EVIDENCE_SEAL_INTERVAL_MS: '3600000',
    API_REQUEST_TIMEOUT_MS: '500',
    API_HEADERS_TIMEOUT_MS: '500',
    EDGE_WORK_POLL_MS: '100',
  });
});
afterAll(async () => {
  await api?.stop();
  await flushPrefix(prefix);
  await db?.drop();
});

/**
 * Opens a raw connection, writes `head`, then sends nothing more. Resolves with what the
 * server wrote and whether it closed the connection within `withinMs` (far above the
 * configured timeout: this is not a timing test, Node's default would be 300 s).
 */
function stall(head: string, withinMs = 15_000): Promise<{ closed: boolean; received: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(api.port, '127.0.0.1', () => socket.write(head));
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, received });
    }, withinMs);
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A reset after the 408 is a close as well.
      if (err.code !== 'ECONNRESET') reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, received });
    });
  });
}

describe('the api HTTP server bounds how long a request may take to arrive', () => {
  it('answers 408 and closes a connection whose body stalls, before authentication reads it', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(500_000), provider: 'generic' });
    const head =
      `POST /v1/tenants/${tenant.tenantId}/ingesters HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `X-Api-Key: ${tenant.apiKey}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, -1)}`;
    const got = await stall(head);
    expect(got.closed).toBe(true);
    expect(got.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('answers 408 and closes a connection whose headers stall', async () => {
    const got = await stall(`GET /v1/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: ${tenant.apiKey}\r\n`);
    expect(got.closed).toBe(true);
    expect(got.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('does not cut a request received whole whose answer waits longer (edge long-poll), nor the requests after a stall', async () => {
    const cluster = await insertCluster(db.pool, tenant.tenantId);
    const started = Date.now();
    const res = await edgePost(api.url, `/v1/edge/clusters/${cluster.id}/work`, cluster.key, { agent_id: 'a', agent_version: 'v', max: 1, wait_seconds: 2 });
    expect(res.status).toBe(200);
    expect(res.body.deliveries).toEqual([]);
    // It did wait past the 500 ms request timeout (nothing to lease: it waits its 2 s).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);

    const ok = await fetch(`${api.url}/v1/overview`, { headers: { 'x-api-key': tenant.apiKey } });
    expect(ok.status).toBe(200);
  });
});

describe('the server limits the api reads', () => {
  it('default to a 30 s request, 15 s headers, 5 s keep-alive and 2000 connections, checked every second', () => {
    expect(loadApiConfig({}).httpServer).toEqual({ requestTimeout: 30_000, headersTimeout: 15_000, connectionsCheckingInterval: 1_000, keepAliveTimeout: 5_000, maxConnections: 2_000 });
  });

  it('keep the headers timeout within the request timeout (Node refuses more), check often for short ones, and read 0 connections as no limit', () => {
    const c = loadApiConfig({ API_REQUEST_TIMEOUT_MS: '500', API_HEADERS_TIMEOUT_MS: '15000', API_MAX_CONNECTIONS: '0' }).httpServer;
    expect(c).toMatchObject({ requestTimeout: 500, headersTimeout: 500, maxConnections: null });
    expect(c.connectionsCheckingInterval).toBeLessThan(500);
    expect(() => loadApiConfig({ API_REQUEST_TIMEOUT_MS: '0' })).toThrow(/API_REQUEST_TIMEOUT_MS/);
  });
});
