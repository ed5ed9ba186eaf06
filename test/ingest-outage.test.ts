import { freePort } from '@hookline/testing';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { startTcpProxy, type TcpProxy } from '../services/ingest/src/testing/tcp-proxy';

// Dependencies taken away, on loopback only: a closed local port, or a local relay cut.
const withPort = (url: string, port: number): string => {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
};

describe('Redis unreachable', () => {
  let h: IngestHarness;
  beforeAll(async () => {
    h = await startIngestHarness({ label: 'ingnoredis', appRedisUrl: `redis://127.0.0.1:${await freePort()}` });
  });
  afterAll(() => h.close());

  test('the event is still committed and answered 202 (recovery enqueues it later)', async () => {
    const { ingesterId } = await h.seedIngester();
    const res = await h.post(ingesterId, '{"survives":true}');
    expect(res.status).toBe(202);
    const { rows } = await h.db.pool.query('SELECT e.status, p.body FROM events e JOIN event_payloads p ON p.event_id = e.id WHERE e.id = $1', [res.json['event_id']]);
    expect(rows).toHaveLength(1);
    expect(rows[0].status).toBe('validated');
    expect(rows[0].body.toString()).toBe('{"survives":true}');
  });

  test('readiness reports Redis down', async () => {
    const res = await fetch(`${h.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'not_ready', checks: { postgres: true, redis: false } });
  });
});

describe('PostgreSQL unreachable from the start', () => {
  let h: IngestHarness;
  beforeAll(async () => {
    const port = await freePort();
    h = await startIngestHarness({ label: 'ingnopg', appDatabaseUrl: (url) => withPort(url, port) });
  });
  afterAll(() => h.close());

  test('POST → 503 problem details with Retry-After, never 2xx', async () => {
    const { ingesterId } = await h.seedIngester();
    const res = await h.post(ingesterId, '{}');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.json).toMatchObject({ type: expect.stringMatching(/\/service-unavailable$/), instance: res.headers.get('x-request-id') });
    expect((await fetch(`${h.url}/readyz`)).status).toBe(503);
  });
});

describe('PostgreSQL lost while running', () => {
  let h: IngestHarness;
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await startTcpProxy(Number(new URL(process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test').port || 5432));
    h = await startIngestHarness({ label: 'inglostpg', appDatabaseUrl: (url) => withPort(url, proxy.port) });
  });
  afterAll(() => h.close());

  test('with the ingester cached, the batch write fails → 503 and nothing is stored', async () => {
    const { ingesterId } = await h.seedIngester();
    expect((await h.post(ingesterId, '{"n":1}')).status).toBe(202);
    await proxy.cut();
    const results = await Promise.all([h.post(ingesterId, '{"n":2}'), h.post(ingesterId, '{"n":3}')]);
    expect(results.map((r) => r.status)).toEqual([503, 503]);
    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM events WHERE ingester_id = $1', [ingesterId]);
    expect(rows[0].n).toBe(1);
  });
});

describe('PostgreSQL stalled (connections open, nothing answered)', () => {
  let h: IngestHarness;
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await startTcpProxy(Number(new URL(process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test').port || 5432));
    h = await startIngestHarness({ label: 'ingstallpg', env: { INGEST_DB_TIMEOUT_MS: '2500' }, appDatabaseUrl: (url) => withPort(url, proxy.port) });
  });
  afterAll(async () => {
    await proxy.cut();
    await h.close();
  });

  // Without a statement deadline these requests got no answer at all. The abort only keeps
  // a regression from hanging the suite; the assertions are about the answers.
  const post = async (ingesterId: string, body: string): Promise<{ status: number; retryAfter: string | null; json: Record<string, unknown> }> => {
    const res = await fetch(`${h.url}/in/${ingesterId}`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(20_000) });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), json: (await res.json()) as Record<string, unknown> };
  };

  test('cached ingester: the batch write is given up → 503 problem details, never 2xx; an unknown one → 503 too', async () => {
    const { ingesterId } = await h.seedIngester();
    const cold = await h.seedIngester();
    expect((await post(ingesterId, '{"n":1}')).status).toBe(202);
    proxy.stall();
    const results = await Promise.all([post(ingesterId, '{"n":2}'), post(ingesterId, '{"n":3}'), post(cold.ingesterId, '{"n":4}')]);
    for (const r of results) {
      expect(r.status).toBe(503);
      expect(r.retryAfter).toBe('1');
      expect(r.json).toMatchObject({ type: expect.stringMatching(/\/service-unavailable$/), status: 503, instance: expect.any(String) });
    }
    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM events WHERE ingester_id = ANY($1::text[])', [[ingesterId, cold.ingesterId]]);
    expect(rows[0].n).toBe(1);
  });
});
