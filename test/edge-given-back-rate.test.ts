// Rate tokens of deliveries given back unsent on the edge path: a work poll that leased a
// delivery took a token of its destination's one-second window; when the delivery goes back
// unsent (the agent's signed release, a poll that could not hand it out, refused before
// sending), the token goes back to that window while it is still the current one, so the
// destination is not starved of its rate by deliveries that never went. Never into a later
// window: that one would then send more than the limit. One Redis call per give-back batch,
// failing open. The api in-process on loopback, real PostgreSQL and Redis; time is driven
// through pinned gate and give-back clocks, never by waiting (but for the one test through
// the endpoints, which starts at the beginning of a second).
import { setTimeout as sleep } from 'node:timers/promises';
import { destinationHealthKey, destinationRateKey, type Redis } from '@hookline/queues';
import { newLeaseOwner, takeRateTokens, type WorkItem } from '@hookline/delivery';
import type { EdgeDeps } from '../services/api/src/edge/edge-deps';
import { leaseWork } from '../services/api/src/edge/lease-work';
import { releaseAgentLeases, releasePollLeases } from '../services/api/src/edge/release-leases';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, countedRedis, deliveryRow, edgePost, gateEdgeDeps, GATE_COOLDOWN_MS, GATE_ENV, insertCluster, insertEdgeDelivery, scriptsFailing, warningLogger } from './edge-fixtures';

jest.setTimeout(30_000);


let h: ApiHarness;
let tenantId: string;
let deps: EdgeDeps;

type Cluster = { id: string; key: string; sealed: string };

beforeAll(async () => {
  h = await startApi('edgegbrate', GATE_ENV);
  tenantId = (await h.tenant()).tenantId;
  deps = edgeDeps(h.redis);
});

afterAll(async () => {
  await h?.close();
});

function edgeDeps(redis: Redis, over: Partial<EdgeDeps> = {}): EdgeDeps {
  return { ...gateEdgeDeps(h, redis, 'edge-given-back-rate-test'), ...over };
}

/** A gate clock pinned 100 ms into a one-second window: which window a call falls in is chosen here. */
const windowStart = (): number => Math.floor(Date.now() / 1000) * 1000 + 100;

/** Tokens used of a destination's window (the counter both paths take from). */
async function used(destinationId: string, at: number): Promise<number> {
  return Number((await h.redis.get(destinationRateKey(h.prefix, destinationId, Math.floor(at / 1000)))) ?? 0);
}

async function makeDue(ids: string[]): Promise<void> {
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = ANY($1::text[])`, [ids]);
}

async function deliveriesOf(cluster: Cluster, n: number, config: Record<string, unknown>): Promise<{ destinationId: string; ids: string[] }> {
  const first = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { config });
  const ids = [first.deliveryId];
  for (let i = 1; i < n; i++) ids.push((await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: first.destinationId })).deliveryId);
  return { destinationId: first.destinationId, ids };
}

const asRelease = (d: WorkItem) => ({ delivery_id: d.id, lease_owner: d.lease_owner });

describe('a delivery given back unsent returns its rate token to the window it took it from, while that window is current', () => {
  it('released by the agent: a later poll of the same window sends in its place; released in a later window, nothing is returned into that window', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const { destinationId, ids } = await deliveriesOf(cluster, 3, { rate_limit_per_second: 2 });
    const T = windowStart();

    // Window 1: agent a gets the two tokens' worth, the third is held back.
    const a = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10, now: T });
    expect([a.deliveries.length, a.heldBack]).toEqual([2, 1]);
    expect(await used(destinationId, T)).toBe(2);

    // Agent a gives one back unsent, still in window 1: its token is returned.
    expect(await releaseAgentLeases(deps, c, 'agent-a', [asRelease(a.deliveries[0]!)], T + 300)).toEqual([{ delivery_id: a.deliveries[0]!.id, result: 'released' }]);
    expect(await used(destinationId, T)).toBe(1);

    // So a poll later in window 1 sends one more (before: none, the window counted as spent
    // by a delivery that never went); the window is then spent, for the deliverer too.
    await makeDue(ids);
    const b = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-b'), max: 10, now: T + 400 });
    expect([b.deliveries.length, b.heldBack]).toEqual([1, 1]);
    expect(await used(destinationId, T)).toBe(2);
    expect((await takeRateTokens(h.redis, h.prefix, destinationId, 2, 1, T + 500)).allowed).toBe(0);

    // Window 2: the deliverer takes one token; then agent a gives back its other delivery,
    // whose token was of window 1. Window 2 gets nothing back: still one used, one left.
    expect((await takeRateTokens(h.redis, h.prefix, destinationId, 2, 1, T + 1000)).allowed).toBe(1);
    expect(await releaseAgentLeases(deps, c, 'agent-a', [asRelease(a.deliveries[1]!)], T + 1100)).toEqual([{ delivery_id: a.deliveries[1]!.id, result: 'released' }]);
    expect(await used(destinationId, T + 1000)).toBe(1);
    expect((await takeRateTokens(h.redis, h.prefix, destinationId, 2, 2, T + 1200)).allowed).toBe(1);
    // Window 1's counter is not touched either (it is over).
    expect(await used(destinationId, T)).toBe(2);
    // Nothing was sent, no attempt used.
    for (const id of ids) expect(await attemptsOf(h.db.pool, id)).toEqual([]);
  });

  it('returns no more than the lease owner took: a second release, another agent\'s tokens and destinations without a limit are left alone', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const limited = await deliveriesOf(cluster, 2, { rate_limit_per_second: 3 });
    const plain = await deliveriesOf(cluster, 1, {});
    const T = windowStart();
    const a = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10, now: T });
    expect(a.deliveries).toHaveLength(3);
    // The deliverer takes the last token of the window.
    expect((await takeRateTokens(h.redis, h.prefix, limited.destinationId, 3, 5, T + 50)).allowed).toBe(1);
    expect(await used(limited.destinationId, T)).toBe(3);

    // Agent a gives back all three: two tokens go back (its own), not the deliverer's.
    const results = await releaseAgentLeases(deps, c, 'agent-a', a.deliveries.map(asRelease), T + 200);
    expect(results.map((r) => r.result)).toEqual(['released', 'released', 'released']);
    expect(await used(limited.destinationId, T)).toBe(1);
    // Repeating the release changes nothing (nothing is released again).
    await releaseAgentLeases(deps, c, 'agent-a', a.deliveries.map(asRelease), T + 300);
    expect(await used(limited.destinationId, T)).toBe(1);
    // The destination without a limit has no window.
    expect(await h.redis.exists(destinationRateKey(h.prefix, plain.destinationId, Math.floor(T / 1000)))).toBe(0);
  });

  it('given back by a work poll that could not hand it out (caller left, drain, cut response, failed poll): returned too', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const { destinationId, ids } = await deliveriesOf(cluster, 2, { rate_limit_per_second: 1 });
    const T = windowStart();
    const owner = newLeaseOwner('edge:gone-agent');
    const a = await leaseWork(deps, c, { leaseOwner: owner, max: 10, now: T });
    expect([a.deliveries.length, a.heldBack]).toEqual([1, 1]);
    expect(await used(destinationId, T)).toBe(1);

    expect(await releasePollLeases(deps, owner, a.deliveries.map((d) => d.id), T + 200)).toEqual([a.deliveries[0]!.id]);
    expect(await used(destinationId, T)).toBe(0);
    await makeDue(ids);
    const b = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-b'), max: 10, now: T + 300 });
    expect([b.deliveries.length, b.heldBack]).toEqual([1, 1]);
  });

  it('refused before sending (payload_missing): its attempt is recorded and its token returned, so the next delivery of the window goes', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    // The older one's payload was purged: it is first in line and takes the window's one token.
    const purged = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { body: null, config: { rate_limit_per_second: 1 } });
    const next = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: purged.destinationId });
    const T = windowStart();
    const a = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10, now: T });
    expect([a.deliveries.length, a.heldBack]).toEqual([0, 1]);
    expect(await attemptsOf(h.db.pool, purged.deliveryId)).toEqual([expect.objectContaining({ number: 1, error_kind: 'payload_missing' })]);
    expect(await used(purged.destinationId, T)).toBe(0);

    await makeDue([next.deliveryId]);
    const b = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10, now: T + 500 });
    expect(b.deliveries.map((d) => d.id)).toEqual([next.deliveryId]);
    expect(await used(purged.destinationId, T)).toBe(1);
  });

  it('through the endpoints: a work poll then the agent\'s signed release in the same second leave the window as it was', async () => {
    // The token comes back only if the poll and the release fall in one window (the api's
    // clock, read between `started` and `ended`). Under load they may not: then again, with
    // a fresh cluster, a few times; never a pass that checked nothing.
    for (let attempt = 1; ; attempt++) {
      const cluster = await insertCluster(h.db.pool, tenantId);
      const { destinationId, ids } = await deliveriesOf(cluster, 2, { rate_limit_per_second: 1 });
      await sleep(1000 - (Date.now() % 1000) + 10);
      const started = Date.now();
      const work = await edgePost(h.url, `/v1/edge/clusters/${cluster.id}/work`, cluster.key, { agent_id: 'agent-a', max: 10, wait_seconds: 0 });
      expect(work.body.deliveries).toHaveLength(1);
      const spent = await used(destinationId, started);
      const rel = await edgePost(h.url, `/v1/edge/clusters/${cluster.id}/releases`, cluster.key, { agent_id: 'agent-a', releases: work.body.deliveries.map(asRelease) });
      const ended = Date.now();
      expect(rel.body.results).toEqual([{ delivery_id: work.body.deliveries[0].id, result: 'released' }]);
      expect((await deliveryRow(h.db.pool, work.body.deliveries[0].id)).lease_owner).toBeNull();
      expect(ids).toContain(work.body.deliveries[0].id);
      if (Math.floor(ended / 1000) !== Math.floor(started / 1000)) {
        expect(attempt).toBeLessThan(5);
        continue;
      }
      expect([spent, await used(destinationId, started)]).toEqual([1, 0]);
      break;
    }
  });
});

describe('cost and failure of giving back', () => {
  it('one Redis round trip per give-back batch, for the tokens and the probe slots of every destination in it', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const limitedA = await deliveriesOf(cluster, 2, { rate_limit_per_second: 5 });
    const limitedB = await deliveriesOf(cluster, 1, { rate_limit_per_second: 5 });
    const probing = await deliveriesOf(cluster, 1, { retry_schedule_ms: [3_600_000] });
    const healthKey = destinationHealthKey(h.prefix, probing.destinationId);
    const T = windowStart();
    // Its circuit opened a cooldown before the gate's clock: the poll takes its probe.
    await h.redis.hset(healthKey, 'state', 'open', 'failures', '3', 'opened_at', String(T - GATE_COOLDOWN_MS - 1));
    const a = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10, now: T });
    expect(a.deliveries).toHaveLength(4);
    expect(await h.redis.hget(healthKey, 'state')).toBe('half_open');

    const r = countedRedis(h.redis);
    const countedDeps = edgeDeps(r.redis);
    // Once, so that the script is cached by the server (a first call may be sent twice: NOSCRIPT, then the script).
    await countedDeps.breaker.giveBack([{ destinationId: 'dst_warm', deliveryId: 'dlv_warm', leaseOwner: 'warm' }], T);
    r.calls.length = 0;
    const results = await releaseAgentLeases(countedDeps, c, 'agent-a', a.deliveries.map(asRelease), T + 100);
    expect(results.every((x) => x.result === 'released')).toBe(true);
    expect(r.calls).toEqual(['evalsha']);
    expect([await used(limitedA.destinationId, T), await used(limitedB.destinationId, T)]).toEqual([0, 0]);
    expect(await h.redis.hmget(healthKey, 'state', 'probe_until')).toEqual(['half_open', null]);
  });

  it('fails open: when Redis cannot answer, the release still goes through and says so; the token stays spent for the rest of its window', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const { destinationId } = await deliveriesOf(cluster, 1, { rate_limit_per_second: 1 });
    const T = windowStart();
    const a = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10, now: T });
    expect(a.deliveries).toHaveLength(1);
    const broken = scriptsFailing(h.redis);
    const { logger, warnings } = warningLogger();
    const results = await releaseAgentLeases(edgeDeps(broken, { logger }), c, 'agent-a', a.deliveries.map(asRelease), T + 100);
    expect(results).toEqual([{ delivery_id: a.deliveries[0]!.id, result: 'released' }]);
    expect((await deliveryRow(h.db.pool, a.deliveries[0]!.id)).lease_owner).toBeNull();
    expect(warnings).toEqual(['could not return the probe slots and rate tokens of deliveries given back unsent; they expire']);
    expect(await used(destinationId, T)).toBe(1);
  });
});
