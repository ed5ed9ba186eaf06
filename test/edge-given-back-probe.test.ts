// A half-open circuit's probe slot belongs to one delivery: the one that took it. Given back
// unsent, that delivery frees the slot (the next poll sends a probe at once); any other
// delivery of the destination given back while the probe is out (leased before the circuit
// opened, or by a poll whose caller left) leaves it alone, so no second probe goes. Nor does
// an edge give-back free the deliverer's probe. The api in-process on loopback, real
// PostgreSQL and Redis; time is driven through the Redis state and next_attempt_at, never by
// waiting.
import { destinationHealthKey } from '@hookline/queues';
import { destinationSettings, newLeaseOwner, type WorkItem } from '@hookline/delivery';
import type { ClaimedDelivery } from '../services/deliverer/src/claim-deliveries';
import { gateDeliveries } from '../services/deliverer/src/gate-deliveries';
import type { EdgeDeps } from '../services/api/src/edge/edge-deps';
import { leaseWork } from '../services/api/src/edge/lease-work';
import { releaseAgentLeases, releasePollLeases } from '../services/api/src/edge/release-leases';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, edgePost, gateEdgeDeps, GATE_COOLDOWN_MS, GATE_ENV, insertCluster, insertEdgeDelivery } from './edge-fixtures';

jest.setTimeout(30_000);


let h: ApiHarness;
let tenantId: string;
let deps: EdgeDeps;

type Cluster = { id: string; key: string; sealed: string };
type C = { id: string; tenantId: string; signedWith: string };

beforeAll(async () => {
  h = await startApi('edgegbprobe', GATE_ENV);
  tenantId = (await h.tenant()).tenantId;
  deps = gateEdgeDeps(h, h.redis, 'edge-given-back-probe-test');
});

afterAll(async () => {
  await h?.close();
});

const poll = (c: C, agent: string) => leaseWork(deps, c, { leaseOwner: newLeaseOwner(`edge:${agent}`), max: 10 });
const asRelease = (d: WorkItem) => ({ delivery_id: d.id, lease_owner: d.lease_owner });

async function makeDue(ids: string[]): Promise<void> {
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = ANY($1::text[])`, [ids]);
}

/** A destination of the cluster with `n` due deliveries (retries far away). */
async function deliveriesOf(cluster: Cluster, n: number, destinationId?: string): Promise<{ destinationId: string; ids: string[] }> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId, config: { retry_schedule_ms: [3_600_000] } });
    destinationId = d.destinationId;
    ids.push(d.deliveryId);
  }
  return { destinationId: destinationId!, ids };
}

/** The circuit opened a cooldown ago: the next caller may send the probe. */
async function coolDown(destinationId: string): Promise<string> {
  const key = destinationHealthKey(h.prefix, destinationId);
  await h.redis.hset(key, 'state', 'open', 'failures', '3', 'opened_at', String(Date.now() - GATE_COOLDOWN_MS - 1));
  return key;
}

/** The probe slot: state, whether a probe is in flight, and which delivery holds it. */
async function slot(key: string): Promise<{ state: string | null; out: boolean; holder: string | null }> {
  const [state, probeUntil, holder] = await h.redis.hmget(key, 'state', 'probe_until', 'probe_holder');
  return { state: state ?? null, out: probeUntil != null && Number(probeUntil) > Date.now(), holder: holder ?? null };
}

describe('a probe slot is freed only by its own probe given back', () => {
  it('other leases of the destination given back while the probe is out (the agent\'s release, a poll\'s give-back) leave the slot: no second probe', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    // Two deliveries leased while the circuit was closed: one by an agent that will release
    // it, one by a poll whose caller will leave.
    const before = await deliveriesOf(cluster, 2);
    const agentX = await poll(c, 'agent-x');
    const pollOwner = newLeaseOwner('edge:gone-agent');
    expect(agentX.deliveries.map((d) => d.id)).toEqual(before.ids);
    await h.db.pool.query(`UPDATE deliveries SET lease_owner = $2 WHERE id = $1`, [before.ids[1], pollOwner]);

    // The circuit opens and cools down; two more deliveries wait. Agent a gets the probe.
    const after = await deliveriesOf(cluster, 2, before.destinationId);
    const key = await coolDown(before.destinationId);
    const a = await poll(c, 'agent-a');
    expect(a.deliveries.map((d) => d.id)).toEqual([after.ids[0]]);
    expect(await slot(key)).toEqual({ state: 'half_open', out: true, holder: after.ids[0] });

    // Agent x gives its lease back through the signed endpoint; the poll's lease goes back too.
    const res = await edgePost(h.url, `/v1/edge/clusters/${cluster.id}/releases`, cluster.key, { agent_id: 'agent-x', releases: [asRelease(agentX.deliveries[0]!)] });
    expect(res.body.results).toEqual([{ delivery_id: before.ids[0], result: 'released' }]);
    expect(await releasePollLeases(deps, pollOwner, [before.ids[1]!])).toEqual([before.ids[1]]);
    // The probe is still out, held by agent a's delivery.
    expect(await slot(key)).toEqual({ state: 'half_open', out: true, holder: after.ids[0] });

    // So the next poll sends no second probe: everything due is held back.
    await makeDue([...before.ids, after.ids[1]!]);
    const b = await poll(c, 'agent-b');
    expect([b.deliveries.length, b.heldBack]).toEqual([0, 3]);

    // Agent a gives its probe back unsent: now the slot is freed, and the next poll sends a probe at once.
    expect(await releaseAgentLeases(deps, c, 'agent-a', [asRelease(a.deliveries[0]!)])).toEqual([{ delivery_id: after.ids[0], result: 'released' }]);
    expect(await slot(key)).toEqual({ state: 'half_open', out: false, holder: null });
    const next = await poll(c, 'agent-c');
    expect(next.deliveries).toHaveLength(1);
    expect(await slot(key)).toEqual({ state: 'half_open', out: true, holder: next.deliveries[0]!.id });
    for (const id of [...before.ids, ...after.ids]) expect(await attemptsOf(h.db.pool, id)).toEqual([]);
  });

  it('a probe whose slot ran out and went to another probe does not free that one when it is given back late', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const { destinationId, ids } = await deliveriesOf(cluster, 2);
    const key = await coolDown(destinationId);
    const a = await poll(c, 'agent-a');
    expect(a.deliveries.map((d) => d.id)).toEqual([ids[0]]);
    // Its probe lease ran out (an agent that went quiet): the next poll sends a new probe.
    await h.redis.hset(key, 'probe_until', String(Date.now() - 1));
    await makeDue([ids[1]!]);
    const b = await poll(c, 'agent-b');
    expect(b.deliveries.map((d) => d.id)).toEqual([ids[1]]);
    expect(await slot(key)).toEqual({ state: 'half_open', out: true, holder: ids[1] });

    // Agent a's lease still holds the first delivery; it gives it back now: b's probe keeps its slot.
    expect(await releaseAgentLeases(deps, c, 'agent-a', [asRelease(a.deliveries[0]!)])).toEqual([{ delivery_id: ids[0], result: 'released' }]);
    expect(await slot(key)).toEqual({ state: 'half_open', out: true, holder: ids[1] });
    await makeDue([ids[0]!]);
    expect((await poll(c, 'agent-c')).deliveries).toEqual([]);
  });

  it('the deliverer\'s probe is never freed by an edge give-back (it names no edge delivery)', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const { destinationId, ids } = await deliveriesOf(cluster, 1);
    const x = await poll(c, 'agent-x');
    expect(x.deliveries.map((d) => d.id)).toEqual(ids);
    const key = await coolDown(destinationId);

    // The deliverer's gate takes the probe, with its own (direct) delivery.
    const item = { d: { id: 'dlv_direct_probe', destinationId } as ClaimedDelivery, settings: destinationSettings('POST', {}, deps.policy.defaults) };
    const gated = await gateDeliveries({ redis: h.redis, prefix: h.prefix, breaker: deps.breaker, logger: deps.logger }, [item]);
    expect(gated.allowed).toHaveLength(1);
    expect(await slot(key)).toEqual({ state: 'half_open', out: true, holder: null });

    // Agent x gives back its lease of that destination: the deliverer's probe keeps its slot.
    expect(await releaseAgentLeases(deps, c, 'agent-x', x.deliveries.map(asRelease))).toEqual([{ delivery_id: ids[0], result: 'released' }]);
    expect((await slot(key)).out).toBe(true);
    expect((await poll(c, 'agent-y')).deliveries).toEqual([]);
  });
});
