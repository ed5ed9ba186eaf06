// Issue 2's end-to-end tests: the four services as separate processes on loopback,
// real PostgreSQL and Redis, a local receiver.
import { startReceiver, waitFor, flushPrefix, type Receiver } from '@hookline/testing';
import { apiClient, createStack, postEvent, seedTenant, type Stack } from './support/stack';

jest.setTimeout(120_000);

let stack: Stack;
let api: ReturnType<typeof apiClient>;
const receivers: Receiver[] = [];

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  stack = await createStack('pipeline');
  const tenant = await seedTenant(stack.db.pool, { plan: 'pro' });
  api = apiClient(stack.services.api!.url, tenant);
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await stack?.close();
});

test('a JSON event arrives byte-for-byte with the idempotency header, and the API shows it delivered with one timed attempt', async () => {
  const rx = await receiver();
  const ing = await api.ingester();
  expect(ing.hook_url).toBe(`http://127.0.0.1:${stack.ingestPort}/in/${ing.id}`);
  const dst = await api.destination(`${rx.url}/hooks`);
  await api.flow(ing.id, dst.id);

  // Odd spacing and key order: the body must not be re-serialised on the way.
  const body = Buffer.from('{"type":"order.created",  "data": {"id": 42, "note": "caf\\u00e9 ☕"}}\n');
  const res = await postEvent(ing.hook_url, body);
  expect(res.status).toBe(202);
  const eventId: string = res.body.event_id;
  expect(eventId).toMatch(/^evt_/);

  await waitFor(() => rx.requests.length === 1, { what: 'delivery at the receiver' });
  const got = rx.requests[0]!;
  expect(Buffer.compare(got.body, body)).toBe(0);
  expect(got.headers['content-type']).toBe('application/json');
  expect(got.url).toBe('/hooks');

  const [delivery] = await waitFor(async () => {
    const ds = await api.deliveriesOf(eventId);
    return ds.length === 1 && ds[0]!.status === 'delivered' ? ds : null;
  }, { what: 'delivery status delivered' });
  expect(delivery!.id).toMatch(/^dlv_/);
  expect(got.headers['x-service-delivery-idempotency-key']).toBe(delivery!.id);

  const one = await api.delivery(delivery!.id);
  expect(one.status).toBe(200);
  expect(one.body.status).toBe('delivered');
  expect(one.body.event_id).toBe(eventId);

  const attempts = await api.attempts(delivery!.id);
  expect(attempts).toHaveLength(1);
  expect(attempts[0]!.status_code).toBe(200);
  expect(typeof attempts[0]!.duration_ms).toBe('number');
  expect(attempts[0]!.duration_ms).toBeGreaterThanOrEqual(0);
  expect(Number.isNaN(Date.parse(attempts[0]!.started_at))).toBe(false);

  const ev = await stack.db.pool.query('SELECT status, validated_at, filtered_at, delivered_at FROM events WHERE id = $1', [eventId]);
  expect(ev.rows[0].status).toBe('delivered');
  expect(ev.rows[0].validated_at).not.toBeNull();
  expect(ev.rows[0].filtered_at).not.toBeNull();
  expect(ev.rows[0].delivered_at).not.toBeNull();
});

test('fan-out to three destinations: one delivery each', async () => {
  const rxs = await Promise.all([receiver(), receiver(), receiver()]);
  const ing = await api.ingester();
  for (const rx of rxs) {
    const dst = await api.destination(rx.url);
    await api.flow(ing.id, dst.id);
  }
  const res = await postEvent(ing.hook_url, '{"type":"fan.out"}');
  expect(res.status).toBe(202);
  await waitFor(() => rxs.every((r) => r.requests.length === 1), { what: 'all three receivers' });
  const ds = await waitFor(async () => {
    const list = await api.deliveriesOf(res.body.event_id);
    return list.length === 3 && list.every((d) => d.status === 'delivered') ? list : null;
  }, { what: 'three delivered deliveries' });
  expect(new Set(ds.map((d) => d.destination_id)).size).toBe(3);
});

test('a receiver that fails twice then succeeds: three attempts, delivered', async () => {
  const rx = await receiver((n) => (n <= 2 ? { status: 500, body: 'boom' } : { status: 200 }));
  const ing = await api.ingester();
  const dst = await api.destination(rx.url);
  await api.flow(ing.id, dst.id);
  const res = await postEvent(ing.hook_url, '{"type":"flaky"}');
  const [d] = await waitFor(async () => {
    const list = await api.deliveriesOf(res.body.event_id);
    return list[0]?.status === 'delivered' ? list : null;
  }, { what: 'delivered after retries' });
  const attempts = await api.attempts(d!.id);
  expect(attempts.map((a) => a.status_code).sort()).toEqual([200, 500, 500]);
  expect(rx.requests).toHaveLength(3);
  // Same idempotency key on every attempt.
  expect(new Set(rx.requests.map((r) => r.headers['x-service-delivery-idempotency-key'])).size).toBe(1);
});

test('a receiver that always fails: exhausted after 5 attempts, event in the DLQ', async () => {
  const rx = await receiver(() => ({ status: 503 }));
  const ing = await api.ingester();
  const dst = await api.destination(rx.url);
  await api.flow(ing.id, dst.id);
  const res = await postEvent(ing.hook_url, '{"type":"doomed"}');
  const [d] = await waitFor(async () => {
    const list = await api.deliveriesOf(res.body.event_id);
    return list[0]?.status === 'exhausted' ? list : null;
  }, { what: 'exhausted', timeoutMs: 30_000 });
  expect(await api.attempts(d!.id)).toHaveLength(5);
  expect(rx.requests).toHaveLength(5);
  const dlq = await api.call('GET', '/v1/deliveries?status=exhausted&limit=10');
  expect(dlq.status).toBe(200);
  expect(dlq.body.deliveries.map((x: { id: string }) => x.id)).toContain(d!.id);
  const ev = await stack.db.pool.query('SELECT status FROM events WHERE id = $1', [res.body.event_id]);
  expect(ev.rows[0].status).toBe('dlq_queued');
});

test('Redis flushed after ingest answered 2xx and before routing: the event is still delivered', async () => {
  const rx = await receiver();
  const ing = await api.ingester();
  const dst = await api.destination(rx.url);
  await api.flow(ing.id, dst.id);
  await stack.stop('router');
  const res = await postEvent(ing.hook_url, '{"type":"survives.flush"}');
  expect(res.status).toBe(202);
  expect(await flushPrefix(stack.prefix)).toBeGreaterThan(0); // the route job is gone
  await stack.start('router');
  await waitFor(() => rx.requests.length >= 1, { what: 'delivery after recovery', timeoutMs: 30_000 });
  expect(JSON.parse(rx.requests[0]!.body.toString())).toEqual({ type: 'survives.flush' });
});

test('Redis flushed after routing and before delivery: the delivery is still made', async () => {
  const rx = await receiver();
  const ing = await api.ingester();
  const dst = await api.destination(rx.url);
  await api.flow(ing.id, dst.id);
  await stack.stop('deliverer');
  const res = await postEvent(ing.hook_url, '{"type":"survives.flush.2"}');
  await waitFor(async () => (await api.deliveriesOf(res.body.event_id)).length === 1, { what: 'delivery row' });
  await flushPrefix(stack.prefix);
  await stack.start('deliverer');
  await waitFor(() => rx.requests.length >= 1, { what: 'delivery after recovery', timeoutMs: 30_000 });
  await waitFor(async () => (await api.deliveriesOf(res.body.event_id))[0]?.status === 'delivered', { what: 'delivered' });
});

test('missing or invalid API key: 401 problem details; another tenant cannot see an ingester (404)', async () => {
  const base = stack.services.api!.url;
  const missing = await fetch(`${base}/v1/deliveries?status=exhausted`);
  expect(missing.status).toBe(401);
  expect(missing.headers.get('content-type')).toContain('application/problem+json');
  const p = (await missing.json()) as Record<string, unknown>;
  expect(p.status).toBe(401);
  expect(String(p.type)).toMatch(/unauthorized$/);
  expect(typeof p.instance).toBe('string');

  const bad = await fetch(`${base}/v1/deliveries?status=exhausted`, { headers: { authorization: 'Bearer hk_not_a_real_key' } });
  expect(bad.status).toBe(401);

  const mine = await api.ingester();
  const other = apiClient(base, await seedTenant(stack.db.pool));
  const peek = await other.call('GET', `/v1/tenants/${(await stack.db.pool.query('SELECT tenant_id FROM ingesters WHERE id = $1', [mine.id])).rows[0].tenant_id}/ingesters/${mine.id}`);
  expect(peek.status).toBe(404);
  const direct = await fetch(`${base}/v1/deliveries?status=exhausted`, { headers: { 'x-api-key': 'hk_wrong' } });
  expect(direct.status).toBe(401);
});
