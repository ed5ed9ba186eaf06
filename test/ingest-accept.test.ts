import { randomBytes } from 'node:crypto';
import { publishConfigChange, createRedis } from '@hookline/queues';
import { waitFor } from '@hookline/testing';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';

let h: IngestHarness;

beforeAll(async () => {
  // A long cache TTL: only the change announcement can explain a fresh read.
  h = await startIngestHarness({ label: 'ingacc', env: { PAYLOAD_LIMIT_BYTES: '1024', INGESTER_CACHE_TTL_MS: '600000' } });
});
afterAll(() => h.close());

describe('POST /in/{ingester_id}', () => {
  test('202 only once the event and its exact bytes are committed; one route job carries its id', async () => {
    const { ingesterId, tenantId } = await h.seedIngester();
    const body = Buffer.concat([Buffer.from([0xff, 0x00, 0xfe]), randomBytes(64)]);
    const res = await h.post(`${ingesterId}/extra/path?b=2&a=1`, body, {
      'content-type': 'application/octet-stream',
      'x-custom': 'kept',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ event_id: expect.stringMatching(/^evt_/), status: 'accepted' });
    const eventId = res.json['event_id'] as string;
    // Read at once: the answer came after COMMIT, so nothing has to be waited for.
    const { rows } = await h.db.pool.query(
      `SELECT e.tenant_id, e.ingester_id, e.status, e.correlation_id, e.source_ip, e.received_at, e.validated_at, p.body, p.content_type, p.headers, p.query
       FROM events e JOIN event_payloads p ON p.event_id = e.id WHERE e.id = $1`,
      [eventId],
    );
    expect(rows).toHaveLength(1);
    const row = rows[0];
    expect(Buffer.compare(row.body, body)).toBe(0);
    expect(row).toMatchObject({ tenant_id: tenantId, ingester_id: ingesterId, status: 'validated', content_type: 'application/octet-stream', query: 'b=2&a=1', source_ip: '127.0.0.1' });
    expect(row.correlation_id).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(row.headers['x-custom']).toBe('kept');
    expect(row.validated_at.getTime()).toBeGreaterThanOrEqual(row.received_at.getTime() - 5);
    expect(await h.routedEventIds()).toContain(eventId);
  });

  test('many concurrent requests are all stored and each id is routed exactly once', async () => {
    const { ingesterId } = await h.seedIngester();
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => h.post(ingesterId, JSON.stringify({ type: 'bulk', i }))));
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(202));
    const ids = results.map((r) => r.json['event_id'] as string);
    expect(new Set(ids).size).toBe(40);
    const { rows } = await h.db.pool.query(`SELECT count(*)::int AS n, count(*) FILTER (WHERE type = 'bulk')::int AS typed FROM events WHERE ingester_id = $1`, [ingesterId]);
    expect(rows[0]).toEqual({ n: 40, typed: 40 });
    const routed = await h.routedEventIds();
    for (const id of ids) expect(routed.filter((r) => r === id)).toHaveLength(1);
  });

  test('an unsigned generic ingester takes its event type from event_type_path, and a fresh correlation id', async () => {
    const { ingesterId } = await h.seedIngester({ config: { event_type_path: '$.data.kind' } });
    const res = await h.post(ingesterId, '{"type":"ignored","data":{"kind":"order.shipped"}}');
    expect(res.status).toBe(202);
    const { rows } = await h.db.pool.query('SELECT type, correlation_id FROM events WHERE id = $1', [res.json['event_id']]);
    expect(rows[0].type).toBe('order.shipped');
    expect(rows[0].correlation_id).toMatch(/^[0-9a-f]{32}$/);
  });

  test('unknown ingester → 404 problem whose instance is the request id', async () => {
    const res = await h.post('ing_doesnotexist', '{}', { 'x-request-id': 'req-known-1' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('x-request-id')).toBe('req-known-1');
    expect(res.json).toMatchObject({ status: 404, title: 'Not Found', instance: 'req-known-1', type: expect.stringMatching(/\/not-found$/) });
  });

  test.each(['DISABLED', 'DRAFT', 'DELETED'])('a %s ingester → 404 and nothing stored', async (state) => {
    const { ingesterId } = await h.seedIngester({ state });
    const res = await h.post(ingesterId, '{}');
    expect(res.status).toBe(404);
    expect(res.json['instance']).toBe(res.headers.get('x-request-id'));
    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM events WHERE ingester_id = $1', [ingesterId]);
    expect(rows[0].n).toBe(0);
  });

  test('a body over PAYLOAD_LIMIT_BYTES → 413; one at the limit is accepted', async () => {
    const { ingesterId } = await h.seedIngester();
    const over = await h.post(ingesterId, 'x'.repeat(1025));
    expect(over.status).toBe(413);
    expect(over.json).toMatchObject({ status: 413, type: expect.stringMatching(/\/payload-too-large$/) });
    const at = await h.post(ingesterId, 'x'.repeat(1024));
    expect(at.status).toBe(202);
    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM events WHERE ingester_id = $1', [ingesterId]);
    expect(rows[0].n).toBe(1);
  });

  test('a change announcement drops the cached ingester at once', async () => {
    const { ingesterId, tenantId } = await h.seedIngester();
    expect((await h.post(ingesterId, '{}')).status).toBe(202);
    await h.db.pool.query(`UPDATE ingesters SET state = 'DISABLED' WHERE id = $1`, [ingesterId]);
    // A connection that queues commands until connected (a producer one would drop the publish).
    const pub = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
    try {
      await publishConfigChange(pub, h.prefix, { kind: 'ingester', id: ingesterId, tenantId });
      await waitFor(async () => (await h.post(ingesterId, '{}')).status === 404, { timeoutMs: 5000, what: 'the cache to drop the ingester' });
    } finally {
      pub.disconnect();
    }
  });

  test('a reconnect of the change subscriber drops every cached ingester (announcements sent meanwhile were lost)', async () => {
    const { ingesterId } = await h.seedIngester();
    expect((await h.post(ingesterId, '{}')).status).toBe(202);
    // Disabled while the subscriber is cut: no announcement reaches this ingest.
    h.subscriber.disconnect(true);
    await h.db.pool.query(`UPDATE ingesters SET state = 'DISABLED' WHERE id = $1`, [ingesterId]);
    await waitFor(async () => (await h.post(ingesterId, '{}')).status === 404, { timeoutMs: 5000, what: 'the cache to be dropped on reconnect' });
  });
});

describe('other routes', () => {
  test('GET on a hook URL → 405 with Allow; an unknown path → 404; both problem details', async () => {
    const get = await fetch(`${h.url}/in/ing_x`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(((await get.json()) as { instance: string }).instance).toBe(get.headers.get('x-request-id'));
    const nope = await fetch(`${h.url}/nope`, { method: 'POST', body: '{}' });
    expect(nope.status).toBe(404);
    expect(nope.headers.get('content-type')).toBe('application/problem+json');
  });

  test('/healthz and /readyz answer with a request id', async () => {
    const health = await fetch(`${h.url}/healthz`);
    expect(health.status).toBe(200);
    expect(health.headers.get('x-request-id')).toMatch(/^req_/);
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', draining: false, checks: { postgres: true, redis: true } });
  });
});
