// What entitles an edge agent to its leases, checked at each step rather than once:
// - a work long-poll authenticates once, then leases for up to EDGE_MAX_WAIT_SECONDS: each
//   lease statement requires the cluster still ACTIVE and the key that signed the poll still
//   valid, so a disable or a key revocation while a poll is open ends it with an empty list,
//   and the delivery stays for an agent entitled to it;
// - a lease is reported or released by the cluster that took it (the lease owner names it),
//   whatever cluster the destination is on by then, and by no other.
// The api in-process on loopback, real PostgreSQL and Redis.
import { waitFor } from '@hookline/testing';
import type { SeededTenant } from '@hookline/testing';
import { claimDeliveries } from '../services/deliverer/src/claim-deliveries';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, deliveryRow, edgePost, insertCluster, insertEdgeDelivery, SECRETS_KEY, type EdgeCall } from './edge-fixtures';

jest.setTimeout(30_000);

let h: ApiHarness;
let t: SeededTenant;

type Cluster = { id: string; key: string };
const workPath = (c: Cluster) => `/v1/edge/clusters/${c.id}/work`;
const poll = (c: Cluster, key: string, waitSeconds: number, agentId = 'agent-a'): Promise<EdgeCall> =>
  edgePost(h.url, workPath(c), key, { agent_id: agentId, max: 10, wait_seconds: waitSeconds });
const report = (c: Cluster, deliveryId: string, leaseOwner: string, statusCode = 200): Promise<EdgeCall> =>
  edgePost(h.url, `/v1/edge/clusters/${c.id}/reports`, c.key, {
    agent_id: 'agent-a',
    reports: [{ delivery_id: deliveryId, lease_owner: leaseOwner, status_code: statusCode, response_body: 'ok', response_headers: {}, error_kind: null, error: null, started_at: new Date().toISOString(), duration_ms: 5 }],
  });
const release = (c: Cluster, deliveryId: string, leaseOwner: string): Promise<EdgeCall> =>
  edgePost(h.url, `/v1/edge/clusters/${c.id}/releases`, c.key, { agent_id: 'agent-a', releases: [{ delivery_id: deliveryId, lease_owner: leaseOwner }] });
const clusterPath = (c: Cluster) => `/v1/tenants/${t.tenantId}/clusters/${c.id}`;

/** A work poll opened now and authenticated (the cluster marked seen), still waiting. */
async function openPoll(c: Cluster, key: string, waitSeconds: number): Promise<{ answer: Promise<EdgeCall>; done: () => boolean }> {
  let finished = false;
  const answer = poll(c, key, waitSeconds).finally(() => (finished = true));
  await waitFor(async () => (await h.db.pool.query(`SELECT 1 FROM clusters WHERE id = $1 AND last_seen_at IS NOT NULL`, [c.id])).rowCount === 1, { what: 'the poll to be authenticated' });
  expect(finished).toBe(false);
  return { answer, done: () => finished };
}

/** The delivery is as it was: not leased, no attempt. */
async function expectUntouched(deliveryId: string): Promise<void> {
  expect(await deliveryRow(h.db.pool, deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });
  expect(await attemptsOf(h.db.pool, deliveryId)).toEqual([]);
}

beforeAll(async () => {
  h = await startApi('edgeauthority', { SECRETS_KEY, EDGE_LEASE_MS: '600000', EDGE_WORK_POLL_MS: '50' });
  t = await h.tenant();
});

afterAll(async () => {
  await h?.close();
});

describe('a work poll already open when its cluster or key is revoked leases nothing more', () => {
  it('the cluster disabled mid-poll: the poll answers an empty list at once, and the delivery waits for the cluster to be enabled', async () => {
    const c = await insertCluster(h.db.pool, t.tenantId);
    const open = await openPoll(c, c.key, 10);
    expect((await h.call('POST', `${clusterPath(c)}/disable`, { key: t.apiKey })).status).toBe(200);
    const disabledAt = Date.now();
    const d = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    const answer = await open.answer;
    expect({ status: answer.status, deliveries: answer.body.deliveries }).toEqual({ status: 200, deliveries: [] });
    // Ended by the revocation, not by the end of its 10 s wait.
    expect(Date.now() - disabledAt).toBeLessThan(5_000);
    await expectUntouched(d.deliveryId);
    expect((await poll(c, c.key, 0)).status).toBe(401);

    expect((await h.call('POST', `${clusterPath(c)}/enable`, { key: t.apiKey })).status).toBe(200);
    const again = await poll(c, c.key, 0);
    expect(again.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
  });

  it('the key rotated with grace_seconds 0 mid-poll: the poll answers an empty list at once; a poll with the new key gets the delivery', async () => {
    const c = await insertCluster(h.db.pool, t.tenantId);
    const open = await openPoll(c, c.key, 10);
    const rotated = await h.call('POST', `${clusterPath(c)}/rotate-key`, { key: t.apiKey, body: { grace_seconds: 0 } });
    expect(rotated.status).toBe(200);
    const revokedAt = Date.now();
    const d = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    const answer = await open.answer;
    expect({ status: answer.status, deliveries: answer.body.deliveries }).toEqual({ status: 200, deliveries: [] });
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    await expectUntouched(d.deliveryId);

    const fresh = await poll(c, rotated.body.hmac_key as string, 0);
    expect(fresh.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
  });

  it('a rotation with a grace period keeps the poll of the key it replaced until that key is dropped: then the poll ends', async () => {
    const c = await insertCluster(h.db.pool, t.tenantId);
    // Signed with the current key, which the rotation turns into the previous one: still valid.
    const kept = await openPoll(c, c.key, 10);
    const k2 = (await h.call('POST', `${clusterPath(c)}/rotate-key`, { key: t.apiKey, body: { grace_seconds: 600 } })).body.hmac_key as string;
    const first = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    expect((await kept.answer).body.deliveries.map((x: { id: string }) => x.id)).toEqual([first.deliveryId]);

    // Signed with that previous key; a second rotation drops it.
    await h.db.pool.query(`UPDATE clusters SET last_seen_at = NULL WHERE id = $1`, [c.id]);
    const open = await openPoll(c, c.key, 10);
    const k3 = (await h.call('POST', `${clusterPath(c)}/rotate-key`, { key: t.apiKey, body: { grace_seconds: 600 } })).body.hmac_key as string;
    const dropped = Date.now();
    const second = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    expect((await open.answer).body.deliveries).toEqual([]);
    expect(Date.now() - dropped).toBeLessThan(5_000);
    await expectUntouched(second.deliveryId);
    // k2, now the previous key within its grace period, may lease it.
    expect((await poll(c, k2, 0)).body.deliveries.map((x: { id: string }) => x.id)).toEqual([second.deliveryId]);
    expect(k3).not.toBe(k2);
  });

  it('a poll signed with the previous key ends when its grace period does', async () => {
    const c = await insertCluster(h.db.pool, t.tenantId);
    expect((await h.call('POST', `${clusterPath(c)}/rotate-key`, { key: t.apiKey, body: { grace_seconds: 2 } })).status).toBe(200);
    const open = await openPoll(c, c.key, 10);
    await waitFor(async () => (await h.db.pool.query(`SELECT 1 FROM clusters WHERE id = $1 AND previous_key_expires_at <= now()`, [c.id])).rowCount === 1, { what: 'the grace period to end', timeoutMs: 5_000 });
    const expired = Date.now();
    const d = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    expect((await open.answer).body.deliveries).toEqual([]);
    expect(Date.now() - expired).toBeLessThan(5_000);
    await expectUntouched(d.deliveryId);
  });
});

describe('a lease is reported and released by the cluster that took it, wherever its destination went', () => {
  it('a destination moved to another cluster: the holder\'s report is recorded; the new cluster cannot report the lease', async () => {
    const c1 = await insertCluster(h.db.pool, t.tenantId);
    const c2 = await insertCluster(h.db.pool, t.tenantId);
    const d = await insertEdgeDelivery(h.db.pool, t.tenantId, c1.id);
    const item = (await poll(c1, c1.key, 0)).body.deliveries[0];
    expect(item.id).toBe(d.deliveryId);
    expect((await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${d.destinationId}`, { key: t.apiKey, body: { cluster_id: c2.id } })).status).toBe(200);

    // The destination's cluster now, presenting the right lease owner: not its lease.
    expect((await report(c2, d.deliveryId, item.lease_owner, 500)).body.results[0]).toEqual({ delivery_id: d.deliveryId, result: 'ignored', reason: 'not_leased' });
    expect((await release(c2, d.deliveryId, item.lease_owner)).body.results[0]).toEqual({ delivery_id: d.deliveryId, result: 'ignored', reason: 'not_leased' });
    expect(await deliveryRow(h.db.pool, d.deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0, lease_owner: item.lease_owner });

    // The holder's attempt is recorded, not lost.
    expect((await report(c1, d.deliveryId, item.lease_owner, 200)).body.results[0]).toMatchObject({ result: 'recorded', attempt: 1, status: 'delivered' });
    expect(await deliveryRow(h.db.pool, d.deliveryId)).toMatchObject({ status: 'delivered', attempt_count: 1, lease_owner: null });
    expect(await attemptsOf(h.db.pool, d.deliveryId)).toEqual([expect.objectContaining({ number: 1, status_code: 200, via: 'edge' })]);
  });

  it('a destination moved back to direct delivery: the deliverer leaves the edge lease alone; the holder reports or gives it back', async () => {
    const c = await insertCluster(h.db.pool, t.tenantId);
    const a = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    const b = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id, { destinationId: a.destinationId });
    const items = (await poll(c, c.key, 0)).body.deliveries as { id: string; lease_owner: string }[];
    expect(items.map((x) => x.id).sort()).toEqual([a.deliveryId, b.deliveryId].sort());
    expect((await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${a.destinationId}`, { key: t.apiKey, body: { cluster_id: null } })).status).toBe(200);
    const claim = () => claimDeliveries(h.db.pool, { deliveryIds: [a.deliveryId, b.deliveryId], leaseOwner: 'deliverer-test:1', leaseMs: 60_000, slackMs: 0 });

    // While the edge lease is live, the deliverer's claim does not take the deliveries.
    expect(await claim()).toEqual([]);
    const owner = items[0]!.lease_owner;
    expect((await report(c, a.deliveryId, owner, 200)).body.results[0]).toMatchObject({ result: 'recorded', status: 'delivered' });
    expect((await release(c, b.deliveryId, owner)).body.results[0]).toEqual({ delivery_id: b.deliveryId, result: 'released' });
    await expectUntouched(b.deliveryId);
    // Given back, the undelivered one is the deliverer's now; the delivered one is not claimable.
    expect((await claim()).map((x) => x.id)).toEqual([b.deliveryId]);
  });
});
