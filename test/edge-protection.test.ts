// A cluster destination's circuit breaker and rate limit on the edge path: work polls hold
// back what its open circuit or spent rate budget refuses (given back unsent, no attempt,
// postponed), and the attempts agents report open and close its circuit. The state is the
// deliverer's own (Redis, under the queue prefix), asked once per lease batch and once per
// report batch. The api in-process on loopback, real PostgreSQL and Redis; time is driven
// through the gate's clock, the Redis state and next_attempt_at, never by waiting.
import { destinationHealthKey, destinationRateKey, readDestinationHealthState, type Redis } from '@hookline/queues';
import { newLeaseOwner, takeRateTokens, type AttemptReport, type WorkItem } from '@hookline/delivery';
import type { EdgeDeps } from '../services/api/src/edge/edge-deps';
import { leaseWork } from '../services/api/src/edge/lease-work';
import { recordReports } from '../services/api/src/edge/record-reports';
import { recordHealth } from '../services/deliverer/src/record-health';
import { createResponseChecker } from '../services/api/src/openapi/response-checker';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, countedRedis, deliveryRow, edgePost, gateEdgeDeps, GATE_COOLDOWN_MS, GATE_ENV, insertCluster, insertEdgeDelivery, scriptsFailing, warningLogger } from './edge-fixtures';

jest.setTimeout(30_000);


let h: ApiHarness;
let tenantId: string;
let deps: EdgeDeps;
let conformance: ReturnType<typeof createResponseChecker>;

type Cluster = { id: string; key: string; sealed: string };

beforeAll(async () => {
  h = await startApi('edgeprotect', GATE_ENV);
  tenantId = (await h.tenant()).tenantId;
  conformance = createResponseChecker(h.api.openApi());
  // The same endpoints' code called directly, for a pinned clock and a counted Redis.
  deps = edgeDeps(h.redis);
});

afterAll(async () => {
  await h?.close();
});

function edgeDeps(redis: Redis, env: Record<string, string> = {}): EdgeDeps {
  return gateEdgeDeps(h, redis, 'edge-protection-test', env);
}

const work = async (c: Cluster, agentId: string, payload: Record<string, unknown> = {}): Promise<WorkItem[]> => {
  const path = `/v1/edge/clusters/${c.id}/work`;
  const res = await edgePost(h.url, path, c.key, { agent_id: agentId, max: 10, wait_seconds: 0, ...payload });
  expect(res.status).toBe(200);
  expect(conformance.check('POST', path, res.status, res.body)).toEqual([]);
  return res.body.deliveries;
};

const answer = (d: WorkItem, statusCode: number): AttemptReport => ({
  delivery_id: d.id,
  lease_owner: d.lease_owner,
  status_code: statusCode,
  response_body: 'x',
  response_headers: {},
  error_kind: null,
  error: null,
  started_at: new Date().toISOString(),
  duration_ms: 5,
});

async function report(c: Cluster, items: WorkItem[], statusCode: number): Promise<{ result: string; status?: string }[]> {
  const res = await edgePost(h.url, `/v1/edge/clusters/${c.id}/reports`, c.key, { agent_id: 'test-agent', reports: items.map((d) => answer(d, statusCode)) });
  expect(res.status).toBe(200);
  return res.body.results;
}

/** Deliveries postponed by a hold-back: made due now, as if their time had come. */
async function makeDue(ids: string[]): Promise<void> {
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = ANY($1::text[])`, [ids]);
}

/** What a delivery's row says: no lease, attempts used, and how far next_attempt_at was put off by the statement that wrote it. */
async function held(ids: string[]): Promise<{ id: string; lease_owner: string | null; attempt_count: number; status: string; delay_ms: number }[]> {
  const { rows } = await h.db.pool.query(
    `SELECT id, lease_owner, attempt_count, status::text AS status, round(extract(epoch FROM next_attempt_at - updated_at) * 1000)::int AS delay_ms
     FROM deliveries WHERE id = ANY($1::text[]) ORDER BY delay_ms, id`,
    [ids],
  );
  return rows;
}

async function attemptCount(ids: string[]): Promise<number> {
  return (await h.db.pool.query(`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY($1::text[])`, [ids])).rows[0].n;
}

async function deliveriesOf(cluster: Cluster, n: number, opts: { config?: Record<string, unknown> } = {}): Promise<{ destinationId: string; ids: string[] }> {
  const first = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { config: opts.config });
  const ids = [first.deliveryId];
  for (let i = 1; i < n; i++) ids.push((await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: first.destinationId })).deliveryId);
  return { destinationId: first.destinationId, ids };
}

describe('rate_limit_per_second on the edge path', () => {
  it('hands out at most the limit per one-second window across polls and agents; the rest wait, unsent and with no attempt, for later windows', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const { destinationId, ids } = await deliveriesOf(cluster, 6, { config: { rate_limit_per_second: 2 } });
    // The gate's clock, pinned 100 ms into a window: which window a poll falls in is chosen here, not by the time the test takes.
    const T = Math.floor(Date.now() / 1000) * 1000 + 100;
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const poll = (agent: string, now: number) => leaseWork(deps, c, { leaseOwner: newLeaseOwner(`edge:${agent}`), max: 10, now });
    const handedOut: { window: number; id: string }[] = [];

    // Window 1, agent a: two go, four are held back.
    const a1 = await poll('agent-a', T);
    expect([a1.deliveries.length, a1.heldBack]).toEqual([2, 4]);
    handedOut.push(...a1.deliveries.map((d) => ({ window: 1, id: d.id })));
    const rest = ids.filter((id) => !a1.deliveries.some((d) => d.id === id));
    // Given back unsent, no attempt, and spread over the next windows (two per window): 900 ms
    // to the next window, 1900 ms to the one after, exactly as the deliverer spreads them.
    expect((await held(rest)).map((r) => [r.lease_owner, r.attempt_count, r.status, r.delay_ms])).toEqual([
      [null, 0, 'pending', 900],
      [null, 0, 'pending', 900],
      [null, 0, 'pending', 1900],
      [null, 0, 'pending', 1900],
    ]);
    // The deliverer shares that budget: the window is spent for it too.
    expect((await takeRateTokens(h.redis, h.prefix, destinationId, 2, 1, T + 500)).allowed).toBe(0);

    // Still window 1, agent b, with the four due again: the budget is spent, none go.
    await makeDue(rest);
    const b1 = await poll('agent-b', T + 500);
    expect([b1.deliveries.length, b1.heldBack]).toEqual([0, 4]);

    // Window 2: agent b gets two, then agent a none.
    await makeDue(rest);
    const b2 = await poll('agent-b', T + 1000);
    expect([b2.deliveries.length, b2.heldBack]).toEqual([2, 2]);
    handedOut.push(...b2.deliveries.map((d) => ({ window: 2, id: d.id })));
    await makeDue(rest);
    expect((await poll('agent-a', T + 1400)).deliveries).toEqual([]);

    // Window 3: the last two.
    await makeDue(rest);
    const a3 = await poll('agent-a', T + 2000);
    expect([a3.deliveries.length, a3.heldBack]).toEqual([2, 0]);
    handedOut.push(...a3.deliveries.map((d) => ({ window: 3, id: d.id })));

    expect(handedOut.map((x) => x.window)).toEqual([1, 1, 2, 2, 3, 3]);
    expect(handedOut.map((x) => x.id).sort()).toEqual([...ids].sort());
    // Held back three times over, yet no attempt was used: each is reported as its first.
    expect(await attemptCount(ids)).toBe(0);
    const leased = [...a1.deliveries, ...b2.deliveries, ...a3.deliveries];
    const results = await recordReports(deps, c, leased.map((d) => answer(d, 200)));
    expect(results.map((r) => [r.result, 'attempt' in r ? r.attempt : null])).toEqual(new Array(6).fill(['recorded', 1]));
  });

  it('through the work endpoint: one poll gets the limit, an agent polling while the budget is spent gets none, and a fresh window hands out more', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const { destinationId, ids } = await deliveriesOf(cluster, 5, { config: { rate_limit_per_second: 2 } });
    const first = await work(cluster, 'agent-a');
    expect(first).toHaveLength(2);
    const rest = ids.filter((id) => !first.some((d) => d.id === id));
    expect((await held(rest)).every((r) => r.lease_owner === null && r.attempt_count === 0 && r.delay_ms > 0)).toBe(true);

    // Every window from a second ago to a minute ahead spent (by other polls, or the deliverer).
    const second = Math.floor(Date.now() / 1000);
    const windows = Array.from({ length: 62 }, (_, i) => destinationRateKey(h.prefix, destinationId, second - 1 + i));
    for (const k of windows) await h.redis.set(k, '2', 'PX', 120_000);
    await makeDue(rest);
    expect(await work(cluster, 'agent-b')).toEqual([]);
    expect((await held(rest)).map((r) => [r.lease_owner, r.attempt_count])).toEqual(new Array(3).fill([null, 0]));

    // A fresh window: the limit again.
    await h.redis.del(...windows);
    await makeDue(rest);
    expect(await work(cluster, 'agent-b')).toHaveLength(2);
    expect(await attemptCount(ids)).toBe(0);
  });
});

describe('the circuit breaker on the edge path', () => {
  it('failures reported by agents open the circuit: polls hand out nothing, then one probe once the cooldown is over; a failed probe reopens it, a successful one closes it', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    // Retries far away, so that only the deliveries the test makes due come back.
    const { destinationId, ids } = await deliveriesOf(cluster, 3, { config: { retry_schedule_ms: [3_600_000], max_attempts: 10 } });
    const first = await work(cluster, 'agent-a');
    expect(first.map((d) => d.id).sort()).toEqual([...ids].sort());
    expect((await report(cluster, first, 503)).map((r) => r.status)).toEqual(['failed', 'failed', 'failed']);

    const open = await readDestinationHealthState(h.redis, h.prefix, destinationId);
    expect(open).toMatchObject({ state: 'open', consecutiveFailures: 3 });
    expect(open.lastError).toMatch(/http_error/);

    // Open: nothing is handed out; the deliveries are given back unsent, with no attempt,
    // and due when the cooldown ends (no sooner, so a long-poll does not lease them again).
    const waiting = await Promise.all([1, 2].map(() => insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId })));
    const waitingIds = waiting.map((w) => w.deliveryId);
    expect(await work(cluster, 'agent-b')).toEqual([]);
    expect(await work(cluster, 'agent-a', { wait_seconds: 1 })).toEqual([]);
    for (const id of waitingIds) {
      const row = await deliveryRow(h.db.pool, id);
      expect(row).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });
      expect(row.next_attempt_at.getTime()).toBeGreaterThanOrEqual(open.openedAt!.getTime() + GATE_COOLDOWN_MS);
    }
    expect(await attemptCount(waitingIds)).toBe(0);

    // The cooldown is over (the circuit opened a cooldown ago): one probe goes, the other waits.
    const key = destinationHealthKey(h.prefix, destinationId);
    await h.redis.hset(key, 'opened_at', String(Date.now() - GATE_COOLDOWN_MS - 1));
    await makeDue(waitingIds);
    const probe = await work(cluster, 'agent-a');
    expect(probe).toHaveLength(1);
    expect((await readDestinationHealthState(h.redis, h.prefix, destinationId)).state).toBe('half_open');
    // While the probe is out, no other agent gets anything.
    await makeDue(waitingIds);
    expect(await work(cluster, 'agent-b')).toEqual([]);

    // The probe fails: open again, for a new cooldown.
    await report(cluster, probe, 502);
    const reopened = await readDestinationHealthState(h.redis, h.prefix, destinationId);
    expect(reopened.state).toBe('open');
    expect(reopened.openedAt!.getTime()).toBeGreaterThan(open.openedAt!.getTime());
    await makeDue(waitingIds);
    expect(await work(cluster, 'agent-b')).toEqual([]);

    // Another cooldown later the next probe succeeds: closed, and everything due goes again.
    await h.redis.hset(key, 'opened_at', String(Date.now() - GATE_COOLDOWN_MS - 1));
    await makeDue(waitingIds);
    const probe2 = await work(cluster, 'agent-a');
    expect(probe2).toHaveLength(1);
    expect((await report(cluster, probe2, 200))[0]).toMatchObject({ result: 'recorded', status: 'delivered' });
    expect(await readDestinationHealthState(h.redis, h.prefix, destinationId)).toMatchObject({ state: 'closed', consecutiveFailures: 0, failingSince: null });
    await makeDue([...ids, ...waitingIds]);
    const after = await work(cluster, 'agent-b');
    expect(after.map((d) => d.id).sort()).toEqual([...ids, ...waitingIds].filter((id) => id !== probe2[0]!.id).sort());
    // Attempts only for what was sent: three failures, two probes. Held back was never an attempt.
    expect(await attemptCount([...ids, ...waitingIds])).toBe(5);
  });

  it('a repeated report does not count twice, and an open circuit holds back only its own destination', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const failing = await deliveriesOf(cluster, 2, { config: { retry_schedule_ms: [3_600_000] } });
    const other = await deliveriesOf(cluster, 1);
    const leased = await work(cluster, 'agent-a');
    const mine = leased.filter((d) => failing.ids.includes(d.id));
    expect(mine).toHaveLength(2);
    await report(cluster, mine, 500);
    // The same two reports again: ignored, so still two consecutive failures (threshold 3): closed.
    expect((await report(cluster, mine, 500)).map((r) => r.result)).toEqual(['ignored', 'ignored']);
    expect(await readDestinationHealthState(h.redis, h.prefix, failing.destinationId)).toMatchObject({ state: 'closed', consecutiveFailures: 2 });
    // A third failure opens it; the other destination is not held back.
    const third = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: failing.destinationId });
    await report(cluster, [...(await work(cluster, 'agent-a'))], 500);
    expect((await readDestinationHealthState(h.redis, h.prefix, failing.destinationId)).state).toBe('open');
    await makeDue([...failing.ids, other.ids[0]!, third.deliveryId]);
    await h.db.pool.query(`UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE id = $1`, [other.ids[0]]);
    expect((await work(cluster, 'agent-b')).map((d) => d.id)).toEqual([other.ids[0]]);
  });

  it('a held-back backlog does not stall the cluster\'s other destinations: the same poll leases past it', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    // Ten due deliveries of a destination whose circuit is open, older than one of another
    // destination: the first lease statement of a poll (max 10) takes only the ten.
    const older = new Date(Date.now() - 60_000);
    const first = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { nextAttemptAt: older });
    for (let i = 1; i < 10; i++) await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: first.destinationId, nextAttemptAt: older });
    await h.redis.hset(destinationHealthKey(h.prefix, first.destinationId), 'state', 'open', 'opened_at', String(Date.now()), 'failures', '3');
    const other = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    // A poll that does not wait still gets the other destination's delivery.
    expect((await work(cluster, 'agent-a')).map((d) => d.id)).toEqual([other.deliveryId]);
  });

  it('shares the circuit with the deliverer: one opened by direct attempts holds back edge work, and a destination failing too long is disabled by edge reports', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const d = await deliveriesOf(cluster, 1);
    // The deliverer's own recordHealth, on the same prefix and settings, opens the circuit.
    const failure = { statusCode: 503, errorKind: 'http_error' as const, error: 'HTTP 503', responseBody: null, responseHeaders: null, startedAt: new Date(), durationMs: 1 };
    await recordHealth(deps, [1, 2, 3].map(() => ({ destinationId: d.destinationId, result: failure })));
    expect(await work(cluster, 'agent-a')).toEqual([]);
    expect((await deliveryRow(h.db.pool, d.ids[0]!)).attempt_count).toBe(0);

    // Failing without a success since four days ago (beyond DESTINATION_DISABLE_AFTER_MS, 3 days):
    // the next failure an agent reports disables the destination.
    const key = destinationHealthKey(h.prefix, d.destinationId);
    await h.redis.hset(key, 'opened_at', String(Date.now() - GATE_COOLDOWN_MS - 1), 'failing_since', String(Date.now() - 4 * 86_400_000));
    await makeDue(d.ids);
    const probe = await work(cluster, 'agent-a');
    expect(probe).toHaveLength(1);
    await report(cluster, probe, 503);
    const { rows } = await h.db.pool.query(`SELECT state, disabled_reason FROM destinations WHERE id = $1`, [d.destinationId]);
    expect(rows[0].state).toBe('DISABLED');
    expect(rows[0].disabled_reason).toMatch(/failing without a success .*http_error/);
  });
});

describe('cost and failure of the gate', () => {
  it('one Redis round trip per lease batch and one per report batch, however many destinations', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const limited = await deliveriesOf(cluster, 3, { config: { rate_limit_per_second: 1 } });
    const failing = await deliveriesOf(cluster, 2, { config: { retry_schedule_ms: [3_600_000] } });
    const plain = await deliveriesOf(cluster, 2);
    const r = countedRedis(h.redis);
    const countedDeps = edgeDeps(r.redis, { BREAKER_FAILURE_THRESHOLD: '2' });
    // Once, so that the scripts are cached by the server (a first call may be sent twice: NOSCRIPT, then the script).
    await countedDeps.breaker.gateMany([{ destinationId: 'dst_warm', wanted: 1, probeLeaseMs: 1, rateLimitPerSecond: 1 }]);
    await countedDeps.breaker.recordMany([{ destinationId: 'dst_warm', outcome: { successes: 1, trailingFailures: 0, lastError: '' } }]);
    r.calls.length = 0;

    const leased = await leaseWork(countedDeps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10 });
    expect(r.calls).toEqual(['evalsha']);
    // Each destination got its own answer: one of the rate-limited three, all of the others.
    expect(leased.deliveries).toHaveLength(5);
    expect(leased.heldBack).toBe(2);
    expect(leased.deliveries.filter((x) => limited.ids.includes(x.id))).toHaveLength(1);

    r.calls.length = 0;
    const results = await recordReports(countedDeps, c, leased.deliveries.map((x) => answer(x, failing.ids.includes(x.id) ? 503 : 200)));
    expect(results.every((x) => x.result === 'recorded')).toBe(true);
    expect(r.calls).toEqual(['evalsha']);
    expect((await readDestinationHealthState(h.redis, h.prefix, failing.destinationId)).state).toBe('open');
    expect((await readDestinationHealthState(h.redis, h.prefix, plain.destinationId)).state).toBe('closed');
    expect((await readDestinationHealthState(h.redis, h.prefix, limited.destinationId)).state).toBe('closed');
  });

  it('attempts recorded before a report batch fails part-way still feed their circuit (the agent\'s retry of the batch finds them ignored)', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    // Two polls, two lease owners: the batch is recorded one lease owner after the other.
    const first = await deliveriesOf(cluster, 3, { config: { retry_schedule_ms: [3_600_000] } });
    const a = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10 });
    const second = await deliveriesOf(cluster, 1, { config: { retry_schedule_ms: [3_600_000] } });
    const b = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-b'), max: 10 });
    expect([a.deliveries.length, b.deliveries.length]).toEqual([3, 1]);
    // PostgreSQL goes away after the first lease owner's attempts are written.
    let connects = 0;
    const pool = new Proxy(h.db.pool, {
      get(target, prop, receiver) {
        if (prop === 'connect') return () => (++connects > 1 ? Promise.reject(new Error('Connection terminated unexpectedly')) : target.connect());
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const batch = [...a.deliveries, ...b.deliveries].map((x) => answer(x, 503));
    await expect(recordReports({ ...deps, pool }, c, batch)).rejects.toThrow(/terminated/);
    expect(await attemptCount(first.ids)).toBe(3);
    // The agent sends the batch again: the first three are ignored now, the last is recorded.
    expect((await recordReports(deps, c, batch)).map((r) => r.result)).toEqual(['ignored', 'ignored', 'ignored', 'recorded']);
    // Three recorded failures (the threshold): the circuit opened.
    expect(await readDestinationHealthState(h.redis, h.prefix, first.destinationId)).toMatchObject({ state: 'open', consecutiveFailures: 3 });
    expect(await readDestinationHealthState(h.redis, h.prefix, second.destinationId)).toMatchObject({ state: 'closed', consecutiveFailures: 1 });
  });

  it('fails open: when Redis cannot answer, the poll hands out everything and reports are still recorded', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const d = await deliveriesOf(cluster, 3, { config: { rate_limit_per_second: 1 } });
    const broken = scriptsFailing(h.redis);
    const { logger, warnings } = warningLogger();
    const brokenDeps: EdgeDeps = { ...edgeDeps(broken), logger };
    const leased = await leaseWork(brokenDeps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10 });
    expect(leased.deliveries.map((x) => x.id).sort()).toEqual([...d.ids].sort());
    expect(leased.heldBack).toBe(0);
    const results = await recordReports(brokenDeps, c, leased.deliveries.map((x) => answer(x, 503)));
    expect(results.map((x) => x.result)).toEqual(['recorded', 'recorded', 'recorded']);
    expect(await attemptsOf(h.db.pool, d.ids[0]!)).toHaveLength(1);
    // Said so, rather than silently unprotected.
    expect(warnings).toEqual(['destination gate unavailable, leasing without it', 'could not record destination health']);
  });
});
