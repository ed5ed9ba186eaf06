// Private-network delivery end to end: Hookline's four services and hookline-edge agents,
// each its own process on loopback. Events enter through ingest; deliveries of a cluster
// destination reach the local "private" receiver only through an agent.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { freePort, seedTenant, startReceiver, waitFor, type Receiver, type SeededTenant } from '@hookline/testing';
import { apiClient, createStack, postEvent, type Stack } from './support/stack';
import { attemptsOf, deliveryRow, edgePost, startAgent, type AgentProcess } from './edge-fixtures';

jest.setTimeout(120_000);

let stack: Stack;
let tenant: SeededTenant;
let api: ReturnType<typeof apiClient>;
const agents: AgentProcess[] = [];
const receivers: Receiver[] = [];

const STRIPE_SECRET = 'whsec_stripe_test_0123456789abcdef';

/** Stripe's scheme, from its documentation: HMAC-SHA256(secret, "<t>.<raw body>"), hex. */
function stripeSign(body: Buffer, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', STRIPE_SECRET).update(`${t}.`).update(body).digest('hex')}`;
}
function stripeVerifies(body: Buffer, header: string): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  const expected = createHmac('sha256', STRIPE_SECRET).update(`${parts['t']}.`).update(body).digest('hex');
  return timingSafeEqual(Buffer.from(parts['v1'] ?? ''), Buffer.from(expected));
}

interface Plane {
  clusterId: string;
  key: string;
  hookUrl: string;
  destinationId: string;
  signingSecret: string;
  rx: Receiver;
}

/** A cluster, a stripe ingester and a destination of the cluster pointing at a new receiver. */
async function plane(destinationConfig: Record<string, unknown> = {}): Promise<Plane> {
  const rx = await startReceiver();
  receivers.push(rx);
  const cls = await api.call('POST', `/v1/tenants/${tenant.tenantId}/clusters`, { name: `plane-${Math.random().toString(36).slice(2, 8)}` });
  expect(cls.status).toBe(201);
  const ing = await api.ingester({ provider: 'stripe', config: { signing_secret: STRIPE_SECRET } });
  const dst = await api.destination(`${rx.url}/private/hook`, { cluster_id: cls.body.id, config: destinationConfig });
  await api.flow(ing.id, dst.id);
  return { clusterId: cls.body.id, key: cls.body.hmac_key, hookUrl: ing.hook_url, destinationId: dst.id, signingSecret: dst.signing_secret!, rx };
}

async function agentFor(p: Plane, env: Record<string, string> = {}, opts: { ready?: boolean; clockSkewMs?: number } = {}): Promise<AgentProcess> {
  const a = await startAgent({ HOOKLINE_URL: stack.services.api!.url, CLUSTER_ID: p.clusterId, CLUSTER_KEY: p.key, ...env }, opts);
  agents.push(a);
  return a;
}

async function send(p: Plane, body: Buffer): Promise<{ eventId: string; deliveryId: string }> {
  const res = await postEvent(p.hookUrl, body, { 'content-type': 'application/json', 'stripe-signature': stripeSign(body) });
  expect(res.status).toBe(202);
  const eventId = res.body.event_id as string;
  const [d] = await waitFor(async () => {
    const list = await api.deliveriesOf(eventId);
    return list.length > 0 ? list : null;
  }, { what: 'the delivery to be routed' });
  return { eventId, deliveryId: d!.id };
}

beforeAll(async () => {
  stack = await createStack('edgee2e', { EDGE_LEASE_MS: '2000', EDGE_WORK_POLL_MS: '100', EDGE_WAIT_LIMIT_MS: '600000' });
  tenant = await seedTenant(stack.db.pool);
  api = apiClient(stack.services.api!.url, tenant);
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop('SIGKILL')));
  await Promise.all(receivers.map((r) => r.close()));
  await stack?.close();
});

test('delivers through the agent byte for byte: the provider\'s Stripe signature still verifies at the private receiver', async () => {
  const p = await plane();
  await agentFor(p);
  // Odd spacing, key order and escapes: any re-serialisation would change these bytes.
  const body = Buffer.from('{"id":"evt_edge_1",   "type":"charge.succeeded","data":{"amount":1999,"note":"caf\\u00e9 \u2615","z":1,"a":2}}\n');
  const stripeHeader = stripeSign(body);
  const res = await postEvent(p.hookUrl, body, { 'content-type': 'application/json', 'stripe-signature': stripeHeader });
  expect(res.status).toBe(202);
  await waitFor(() => p.rx.requests.length === 1, { what: 'the private receiver to get the event' });

  const got = p.rx.requests[0]!;
  expect(got.url).toBe('/private/hook');
  expect(got.body.equals(body)).toBe(true);
  expect(stripeVerifies(got.body, stripeHeader)).toBe(true);
  // Hookline's own signatures, computed by the service, verify with the destination secret.
  expect(() => new Webhook(p.signingSecret).verify(got.body.toString(), got.headers as Record<string, string>)).not.toThrow();
  const [delivery] = await api.deliveriesOf(res.body.event_id);
  expect(got.headers['x-service-delivery-idempotency-key']).toBe(delivery!.id);
  expect(got.headers['content-type']).toBe('application/json');

  await waitFor(async () => (await deliveryRow(stack.db.pool, delivery!.id)).status === 'delivered', { what: 'the delivery to be recorded delivered' });
  expect(await attemptsOf(stack.db.pool, delivery!.id)).toEqual([{ number: 1, status_code: 200, error_kind: null, via: 'edge', response_body: 'ok' }]);
  const view = await api.call('GET', `/v1/tenants/${tenant.tenantId}/clusters/${p.clusterId}`);
  expect(view.body).toMatchObject({ connected: true, agent_version: '0.1.0', in_flight: 0 });
  const health = await api.call('GET', `/v1/targets/${p.destinationId}/health`);
  expect(health.body).toMatchObject({ destination_id: p.destinationId, window: { attempts: 1 }, success_rate: 1 });
});

test('with no agent connected a delivery waits without using attempts, and goes out when an agent connects', async () => {
  const p = await plane();
  const { deliveryId } = await send(p, Buffer.from('{"id":"evt_wait","type":"invoice.paid"}'));
  // The deliverer and its recovery sweep (RECOVERY_INTERVAL_MS 500) leave it alone.
  await new Promise((r) => setTimeout(r, 1500));
  expect(await deliveryRow(stack.db.pool, deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0 });
  expect(p.rx.requests).toHaveLength(0);
  expect((await api.call('GET', `/v1/tenants/${tenant.tenantId}/clusters/${p.clusterId}`)).body).toMatchObject({ connected: false, last_seen_at: null });

  await agentFor(p);
  await waitFor(async () => (await deliveryRow(stack.db.pool, deliveryId)).status === 'delivered', { what: 'the waiting delivery to go out' });
  expect(p.rx.requests).toHaveLength(1);
  expect(await attemptsOf(stack.db.pool, deliveryId)).toHaveLength(1);
});

test('an agent killed mid-delivery: the lease expires and a second agent delivers it', async () => {
  // timeout 2 s: lease = max(EDGE_LEASE_MS 2000, 2000 + 1000) = 3 s.
  const p = await plane({ timeout_ms: 2000 });
  // The first request is answered only once its agent is dead (held, not a fixed delay that
  // a slow machine could outlast before the kill).
  let answerFirst!: () => void;
  const firstAnswer = new Promise<void>((r) => (answerFirst = r));
  p.rx.setBehaviour((n) => (n === 1 ? { status: 200, body: 'late', hold: firstAnswer } : { status: 200, body: 'ok' }));
  const first = await agentFor(p);
  const body = Buffer.from('{"id":"evt_kill","type":"charge.refunded"}');
  const { deliveryId } = await send(p, body);
  try {
    await waitFor(() => p.rx.requests.length === 1, { what: 'the first agent to start sending' });
    await first.stop('SIGKILL');
    expect(await deliveryRow(stack.db.pool, deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0 });
  } finally {
    answerFirst();
  }

  await agentFor(p);
  await waitFor(async () => (await deliveryRow(stack.db.pool, deliveryId)).status === 'delivered', { timeoutMs: 30_000, what: 'the second agent to deliver it' });
  expect(p.rx.requests).toHaveLength(2);
  expect(p.rx.requests.map((r) => r.headers['x-service-delivery-idempotency-key'])).toEqual([deliveryId, deliveryId]);
  expect(p.rx.requests[1]!.body.equals(body)).toBe(true);
  // Only the attempt that was reported is recorded.
  expect(await attemptsOf(stack.db.pool, deliveryId)).toEqual([{ number: 1, status_code: 200, error_kind: null, via: 'edge', response_body: 'ok' }]);
});

test('the agent never holds leased work unsent: the service\'s lease-time signatures are as fresh as the send', async () => {
  // Signatures are stamped when the service leases (lease-work.ts), so the agent must not
  // lease more than it starts at once. One slot, the first request held: the second
  // delivery stays unleased until the slot frees, and is signed when it is leased then.
  const p = await plane();
  // The first request is held until the rows have been read (not for a fixed time a slow
  // machine could outlast), so the slot is certainly still taken when they are.
  let answerFirst!: () => void;
  const firstAnswer = new Promise<void>((r) => (answerFirst = r));
  p.rx.setBehaviour((n) => (n === 1 ? { status: 200, body: 'ok', hold: firstAnswer } : { status: 200, body: 'ok' }));
  const a = await send(p, Buffer.from('{"id":"evt_slot_a","type":"x"}'));
  const b = await send(p, Buffer.from('{"id":"evt_slot_b","type":"x"}'));
  await agentFor(p, { EDGE_MAX_IN_FLIGHT: '1' });
  try {
    await waitFor(() => p.rx.requests.length === 1, { what: 'the agent to start the first delivery' });
    const rows = await Promise.all([a, b].map((d) => deliveryRow(stack.db.pool, d.deliveryId)));
    expect(rows.map((r) => r.status).sort()).toEqual(['delivering', 'pending']);
    expect(rows.find((r) => r.status === 'pending')).toMatchObject({ attempt_count: 0, lease_owner: null });
    // Still one request: the agent did not start the second while the first is out.
    expect(p.rx.requests).toHaveLength(1);
  } finally {
    answerFirst();
  }

  for (const d of [a, b]) await waitFor(async () => (await deliveryRow(stack.db.pool, d.deliveryId)).status === 'delivered', { what: 'both deliveries to go out' });
  expect(p.rx.requests).toHaveLength(2);
  for (const r of p.rx.requests) expect(() => new Webhook(p.signingSecret).verify(r.body.toString(), r.headers as Record<string, string>)).not.toThrow();
});

test('two agents share the work: every delivery is received once', async () => {
  const p = await plane();
  p.rx.setBehaviour(() => ({ status: 200, body: 'ok', delayMs: 300 }));
  await Promise.all([agentFor(p, { EDGE_MAX_IN_FLIGHT: '3' }), agentFor(p, { EDGE_MAX_IN_FLIGHT: '3' })]);
  const n = 24;
  const sent = await Promise.all(Array.from({ length: n }, (_, i) => postEvent(p.hookUrl, Buffer.from(`{"id":"evt_share_${i}","type":"x"}`), { 'content-type': 'application/json', 'stripe-signature': stripeSign(Buffer.from(`{"id":"evt_share_${i}","type":"x"}`)) })));
  expect(sent.every((r) => r.status === 202)).toBe(true);
  await waitFor(
    async () => {
      const { rows } = await stack.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM deliveries WHERE destination_id = $1 AND status = 'delivered'`, [p.destinationId]);
      return Number(rows[0]!.n) === n;
    },
    { timeoutMs: 60_000, what: 'every delivery to be delivered' },
  );
  const keys = p.rx.requests.map((r) => String(r.headers['x-service-delivery-idempotency-key']));
  expect(keys).toHaveLength(n);
  expect(new Set(keys).size).toBe(n);
  // Each agent holds at most 3; more than 3 answers pending at once means both were sending.
  const spans = p.rx.requests.map((r) => [r.at, r.at + 300] as const);
  const overlap = Math.max(...spans.map(([s]) => spans.filter(([a, b]) => a <= s && s < b).length));
  expect(overlap).toBeGreaterThan(3);
});

test('an agent with a wrong cluster key is refused: it never becomes ready and nothing is delivered', async () => {
  const p = await plane();
  const wrong = await agentFor(p, { CLUSTER_KEY: 'hkc_wrong-key-of-this-cluster-000' }, { ready: false });
  const { deliveryId } = await send(p, Buffer.from('{"id":"evt_wrongkey","type":"x"}'));
  await waitFor(() => wrong.output().includes('401'), { what: 'the agent to be refused' });
  expect((await fetch(`${wrong.url}/readyz`)).status).toBe(503);
  expect(await deliveryRow(stack.db.pool, deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0 });
  expect(p.rx.requests).toHaveLength(0);
});

test('an agent that cannot reach the service backs off, and connects once the service is reachable', async () => {
  const p = await plane();
  const port = await freePort();
  const a = await agentFor(p, { HOOKLINE_URL: `http://127.0.0.1:${port}` }, { ready: false });
  await waitFor(() => (a.output().match(/backing off/g) ?? []).length >= 2, { what: 'the agent to back off' });
  expect((await fetch(`${a.url}/readyz`)).status).toBe(503);
  // The service appears at that address: a TCP relay to the api.
  const apiPort = stack.services.api!.port;
  const sockets = new Set<Socket>();
  const relay = createServer((c) => {
    const up = connect(apiPort, '127.0.0.1');
    sockets.add(c).add(up);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((r) => relay.listen(port, '127.0.0.1', r));
  try {
    await waitFor(async () => (await fetch(`${a.url}/readyz`)).status === 200, { what: 'the agent to connect' });
    const { deliveryId } = await send(p, Buffer.from('{"id":"evt_backoff","type":"x"}'));
    await waitFor(async () => (await deliveryRow(stack.db.pool, deliveryId)).status === 'delivered', { what: 'the delivery through the relayed agent' });
  } finally {
    await a.stop('SIGKILL');
    sockets.forEach((x) => x.destroy());
    await new Promise((r) => relay.close(r));
  }
});

test('SIGTERM: the agent stops pulling, finishes and reports what it holds, then exits 0', async () => {
  const p = await plane();
  p.rx.setBehaviour(() => ({ status: 200, body: 'ok', delayMs: 800 }));
  const a = await agentFor(p);
  const { deliveryId } = await send(p, Buffer.from('{"id":"evt_term","type":"x"}'));
  await waitFor(() => p.rx.requests.length === 1, { what: 'the agent to start sending' });
  expect(await a.stop('SIGTERM')).toBe(0);
  expect(await deliveryRow(stack.db.pool, deliveryId)).toMatchObject({ status: 'delivered', attempt_count: 1 });
});

test('an agent whose clock is 20 minutes ahead signs on the service\'s time and reads its leases on it: it connects and delivers', async () => {
  // Outside the 300 s signature window, and far past every lease by its own clock.
  const p = await plane();
  const a = await agentFor(p, {}, { clockSkewMs: 20 * 60_000 });
  const { deliveryId } = await send(p, Buffer.from('{"id":"evt_skew","type":"x"}'));
  await waitFor(async () => (await deliveryRow(stack.db.pool, deliveryId)).status === 'delivered', { what: 'the skewed agent to deliver' });
  expect(p.rx.requests).toHaveLength(1);
  expect(await attemptsOf(stack.db.pool, deliveryId)).toEqual([{ number: 1, status_code: 200, error_kind: null, via: 'edge', response_body: 'ok' }]);
  expect(a.output()).not.toContain('lease over');
  // Its report is stamped on the service's time too (its host clock, `new Date()` included,
  // is 20 minutes ahead: a report stamped with it is refused, and the delivery never recorded).
  const { rows } = await stack.db.pool.query('SELECT extract(epoch FROM now() - started_at) AS ago FROM delivery_attempts WHERE delivery_id = $1', [deliveryId]);
  expect(Math.abs(Number(rows[0].ago))).toBeLessThan(60);
  expect(a.output()).not.toContain('report refused');
});

test('a target answering a status the service cannot record (999) is reported as a failed attempt, not dropped and sent for ever', async () => {
  const p = await plane();
  p.rx.setBehaviour(() => ({ status: 999, body: 'odd' }));
  await agentFor(p);
  const { deliveryId } = await send(p, Buffer.from('{"id":"evt_999","type":"x"}'));
  await waitFor(async () => (await attemptsOf(stack.db.pool, deliveryId)).length > 0, { what: 'the attempt to be recorded' });
  expect((await attemptsOf(stack.db.pool, deliveryId))[0]).toEqual({ number: 1, status_code: null, error_kind: 'connect', via: 'edge', response_body: null });
});

test('a bad configuration stops the agent with a message naming the variable, never quoting the cluster key', async () => {
  const p = await plane();
  const a = await agentFor(p, { CLUSTER_KEY: 'hkc_s3cr3t', HOOKLINE_URL: 'hookline.internal:8080' }, { ready: false });
  expect(await new Promise((r) => a.child.once('exit', r))).toBe(1);
  expect(a.output()).toMatch(/hookline-edge: invalid configuration: .*CLUSTER_KEY is too short.*HOOKLINE_URL must be an http\(s\) URL/);
  expect(a.output()).not.toContain('s3cr3t');
});

describe('shutdown with a delivery that outlasts it', () => {
  // The target takes 20 s (within the destination's 30 s timeout).
  let p: Plane;
  beforeAll(async () => {
    p = await plane({ timeout_ms: 30_000 });
    p.rx.setBehaviour(() => ({ status: 200, body: 'ok', delayMs: 20_000 }));
  });

  test('SIGTERM: the agent, full and in the middle of a long wait, abandons the unanswered send near its deadline, gives its lease back and exits 0: another agent gets the delivery at once', async () => {
    // Lease: max(EDGE_LEASE_MS 2 s, 30 s timeout + 1 s) = 31 s; the stop takes at most 4 s.
    const a = await agentFor(p, { EDGE_MAX_IN_FLIGHT: '1', EDGE_POLL_WAIT_SECONDS: '60', SHUTDOWN_TIMEOUT_MS: '4000', LOG_LEVEL: 'info' });
    const from = p.rx.requests.length;
    const { deliveryId } = await send(p, Buffer.from('{"id":"evt_deadline","type":"x"}'));
    await waitFor(() => p.rx.requests.length > from, { what: 'the agent to start sending' });
    expect(await deliveryRow(stack.db.pool, deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0 });
    expect(await a.stop('SIGTERM')).toBe(0);
    expect(a.output()).toContain('gave leases back unsent');
    expect(a.output()).not.toContain('exiting with deliveries unreported');
    // Given back, not reported: no attempt, nothing held, due as it was.
    expect(await deliveryRow(stack.db.pool, deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });
    expect(await attemptsOf(stack.db.pool, deliveryId)).toEqual([]);
    // Another agent's poll, right after the exit (far inside the 31 s lease), gets it.
    const next = await edgePost(stack.services.api!.url, `/v1/edge/clusters/${p.clusterId}/work`, p.key, { agent_id: 'next-agent', max: 10, wait_seconds: 0 });
    expect(next.body.deliveries.map((x: { id: string }) => x.id)).toEqual([deliveryId]);
  });

  test('the same signal again while draining exits at once, with 1', async () => {
    const a = await agentFor(p, { LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '60000' });
    const from = p.rx.requests.length;
    await send(p, Buffer.from('{"id":"evt_second_signal","type":"x"}'));
    await waitFor(() => p.rx.requests.length > from, { what: 'the agent to start sending' });
    a.child.kill('SIGTERM');
    await waitFor(() => a.output().includes('"message":"shutting down"'), { what: 'the agent to start draining' });
    expect(await a.stop('SIGTERM')).toBe(1);
    expect(a.output()).toContain('second signal while draining; exiting now');
  });
});

test('a report whose answer is lost is sent again; the service took the first, so the repeat changes nothing: one attempt', async () => {
  const p = await plane();
  // A relay to the api that lets the first report through and then cuts the connection
  // before its answer reaches the agent.
  const apiPort = stack.services.api!.port;
  const sockets = new Set<Socket>();
  let cut = false;
  const relay = createServer((c) => {
    const up = connect(apiPort, '127.0.0.1');
    sockets.add(c).add(up);
    let reportOut = false;
    c.on('data', (d: Buffer) => {
      if (!cut && d.toString('latin1').includes('/reports HTTP/1.1')) reportOut = true;
      up.write(d);
    });
    up.on('data', (d: Buffer) => {
      if (reportOut && !cut) {
        cut = true;
        c.destroy();
        up.destroy();
        return;
      }
      c.write(d);
    });
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
    c.on('close', () => up.destroy());
    up.on('close', () => c.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  try {
    const a = await agentFor(p, { HOOKLINE_URL: `http://127.0.0.1:${(relay.address() as AddressInfo).port}` });
    const { deliveryId } = await send(p, Buffer.from('{"id":"evt_lost_answer","type":"x"}'));
    await waitFor(() => a.output().includes('could not report; retrying'), { what: 'the report to be retried' });
    await waitFor(async () => (await deliveryRow(stack.db.pool, deliveryId)).status === 'delivered', { what: 'the delivery to be recorded' });
    expect(cut).toBe(true);
    expect(p.rx.requests).toHaveLength(1);
    expect(await attemptsOf(stack.db.pool, deliveryId)).toEqual([{ number: 1, status_code: 200, error_kind: null, via: 'edge', response_body: 'ok' }]);
  } finally {
    sockets.forEach((x) => x.destroy());
    await new Promise((r) => relay.close(r));
  }
});
