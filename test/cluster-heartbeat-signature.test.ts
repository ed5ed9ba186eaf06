// Cluster-signed requests (POST /v1/clusters/{cid}/heartbeat) are held to SPEC.md's HMAC
// rules as strictly as the edge agent endpoints: X-Service-Timestamp is required, and each
// signed request is accepted once (a captured heartbeat cannot be replayed within the
// tolerance window), across replicas (the mark is in Redis). With Redis unreachable the
// single-use check fails closed: 503, like edge-auth.ts. The api in-process on loopback,
// real PostgreSQL and Redis (through a loopback proxy that can stall it).
import { EDGE_AUTH_DETAIL } from '../services/api/src/edge/edge-auth';
import { randomUUID } from 'node:crypto';
import { signServiceRequest } from '@hookline/signing';
import { startRedisProxy, waitFor, type RedisProxy } from '@hookline/testing';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';

jest.setTimeout(60_000);

let proxy: RedisProxy;
let h: ApiHarness;
beforeAll(async () => {
  proxy = await startRedisProxy();
  h = await startApi('clhbsig', { REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: '2500', SERVICE_SIGNATURE_TOLERANCE_SECONDS: '60' }, { quiet: true });
});
afterAll(async () => {
  proxy?.resume();
  await h?.close();
  await proxy?.close();
});

async function enroll(): Promise<{ id: string; key: string; beat: string; lastSeen: () => Promise<Date | null> }> {
  const t = await h.tenant();
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: `edge-${randomUUID()}` } });
  expect(made.status).toBe(201);
  const id = made.body.id as string;
  return {
    id,
    key: made.body.hmac_key as string,
    beat: `/v1/clusters/${id}/heartbeat`,
    lastSeen: async () => (await h.db.pool.query<{ last_seen_at: Date | null }>('SELECT last_seen_at FROM clusters WHERE id = $1', [id])).rows[0]!.last_seen_at,
  };
}

const send = (path: string, raw: string, headers: Record<string, string>, base = h.url): Promise<ApiResponse> =>
  base === h.url
    ? h.call('POST', path, { rawBody: raw, headers: { 'content-type': 'application/json', ...headers } })
    : fetch(`${base}${path}`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));

// `reason` is why the request is refused: the answer is the same for every reason (it does
// not tell which cluster ids exist); the reason is only logged (edge/edge-auth.ts).
const expectUnauthorized = (res: ApiResponse, reqId: string, _reason: 'missing_header' | 'replayed'): void => {
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(res.headers.get('x-request-id')).toBe(reqId);
  expect(res.body).toMatchObject({ type: expect.stringMatching(/\/unauthorized$/), title: 'Unauthorized', status: 401, instance: reqId, detail: EDGE_AUTH_DETAIL });
};

test('a correctly signed heartbeat without X-Service-Timestamp → 401 problem details with the request id; nothing recorded', async () => {
  const c = await enroll();
  const raw = JSON.stringify({ agent_version: '1.0.0' });
  const { 'x-service-signature': signature } = signServiceRequest(c.key, raw);
  for (const timestamp of [undefined, '']) {
    const reqId = `req-hb-nots-${randomUUID()}`;
    const headers: Record<string, string> = { 'x-service-signature': signature, 'x-request-id': reqId, ...(timestamp === undefined ? {} : { 'x-service-timestamp': timestamp }) };
    expectUnauthorized(await send(c.beat, raw, headers), reqId, 'missing_header');
  }
  expect(await c.lastSeen()).toBeNull();
  // The same signature with the header is fine: the refusal did not use it up.
  const ok = await send(c.beat, raw, { 'x-service-signature': signature, 'x-service-timestamp': signature.slice(2, signature.indexOf(',')) });
  expect(ok.status).toBe(200);
  expect(ok.body).toMatchObject({ id: c.id, agent_version: '1.0.0' });
});

test('a captured heartbeat replayed within the window → 401 (replayed), also respelled or on another replica; a freshly signed one → 200, per cluster', async () => {
  const c = await enroll();
  const raw = JSON.stringify({ agent_version: '2.0.0' });
  const signed = signServiceRequest(c.key, raw);
  const first = await send(c.beat, raw, signed);
  expect(first.status).toBe(200);
  const seen = await c.lastSeen();
  expect(seen).not.toBeNull();

  const reqId = `req-hb-replay-${randomUUID()}`;
  expectUnauthorized(await send(c.beat, raw, { ...signed, 'x-request-id': reqId }), reqId, 'replayed');

  // Spellings of the same signature that verify just as well: still the same signed request.
  const [t, v1] = signed['x-service-signature'].split(',') as [string, string];
  const hex = v1.slice(3);
  const respelled = [`${t}, ${v1}`, `${t},v1=${hex.toUpperCase()}`, `${t},${v1},v1=${'0'.repeat(64)}`, `${t},v1=${'0'.repeat(64)},${v1}`, `${v1},${t}`];
  for (const header of respelled) {
    const id = `req-hb-respelled-${randomUUID()}`;
    expectUnauthorized(await send(c.beat, raw, { ...signed, 'x-service-signature': header, 'x-request-id': id }), id, 'replayed');
  }

  // Another replica shares the record (Redis).
  const replica = await h.replica();
  const other = await send(c.beat, raw, { ...signed, 'x-request-id': 'req-hb-replica' }, replica);
  expectUnauthorized(other, 'req-hb-replica', 'replayed');
  expect(await c.lastSeen()).toEqual(seen);

  // Sign again (another body, or another second): accepted.
  const next = JSON.stringify({ agent_version: '2.0.1' });
  const again = await send(c.beat, next, signServiceRequest(c.key, next));
  expect(again.status).toBe(200);
  expect(again.body.agent_version).toBe('2.0.1');
  const later = await send(c.beat, raw, signServiceRequest(c.key, raw, Number(t.slice(2)) - 1));
  expect(later.status).toBe(200);
  // The record is per cluster: the same body and second signed by another cluster is its own request.
  const b = await enroll();
  expect((await send(b.beat, raw, signServiceRequest(b.key, raw, Number(t.slice(2))))).status).toBe(200);
});

test('Redis unreachable: the single-use check fails closed (503 problem details with the request id), and holds again once Redis answers', async () => {
  const c = await enroll();
  const raw = JSON.stringify({ agent_version: '3.0.0' });
  proxy.stall();
  let res: ApiResponse;
  const reqId = `req-hb-redis-${randomUUID()}`;
  try {
    res = await send(c.beat, raw, { ...signServiceRequest(c.key, raw), 'x-request-id': reqId });
  } finally {
    proxy.resume();
  }
  expect(res.status).toBe(503);
  expect(res.headers.get('x-request-id')).toBe(reqId);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.body).toMatchObject({ type: expect.stringMatching(/\/service-unavailable$/), status: 503, instance: reqId });
  expect(await c.lastSeen()).toBeNull();

  // The timed-out command made the client reconnect: wait until it answers again.
  await waitFor(() => h.redis.ping().then(() => true), { timeoutMs: 10_000, what: 'Redis' });
  const next = JSON.stringify({ agent_version: '3.0.1' });
  const signed = signServiceRequest(c.key, next);
  expect((await send(c.beat, next, signed)).status).toBe(200);
  expect((await send(c.beat, next, signed)).status).toBe(401);
});
