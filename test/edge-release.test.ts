// Leases given back unsent: by the service, when a work poll's lease statement ran while its
// caller left (or the api began draining), and by an agent through the signed
// `POST /v1/edge/clusters/{cid}/releases`. A released delivery can be leased again at once,
// with no attempt recorded. The api in-process on loopback, real PostgreSQL and Redis.
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { destinationHealthKey } from '@hookline/queues';
import { waitFor } from '@hookline/testing';
import { createResponseChecker } from '../services/api/src/openapi/response-checker';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, deliveryRow, edgePost, insertCluster, insertEdgeDelivery, closeTracked, listenTracked, withLeaseStatementBlocked, SECRETS_KEY, signEdge, type EdgeCall } from './edge-fixtures';

jest.setTimeout(30_000);

let h: ApiHarness;
let server: Server;
let url: string;
let tenantId: string;
let conformance: ReturnType<typeof createResponseChecker>;
/** The api's side of each connection, to see when it has noticed a caller leave. */
let serverSockets: Socket[] = [];

type Cluster = { id: string; key: string };
const workPath = (c: Cluster) => `/v1/edge/clusters/${c.id}/work`;
const releasePath = (c: Cluster) => `/v1/edge/clusters/${c.id}/releases`;
const work = (c: Cluster, agentId: string, payload: Record<string, unknown> = {}) => edgePost(url, workPath(c), c.key, { agent_id: agentId, max: 10, wait_seconds: 0, ...payload });

/** A signed release request, its answer held to the served OpenAPI document. */
async function release(c: Cluster, agentId: string, releases: unknown, opts: { key?: string; headers?: Record<string, string>; extra?: Record<string, unknown> } = {}): Promise<EdgeCall> {
  const res = await edgePost(url, releasePath(c), opts.key ?? c.key, { agent_id: agentId, releases, ...opts.extra }, opts.headers);
  expect(conformance.check('POST', releasePath(c), res.status, res.body)).toEqual([]);
  return res;
}

/** The stored lease and row version of a delivery: a changed xmin means the row was written. */
async function stored(id: string): Promise<{ lease_owner: string | null; lease_until: Date | null; attempt_count: number; status: string; xmin: string }> {
  const { rows } = await h.db.pool.query(`SELECT lease_owner, lease_until, attempt_count, status::text AS status, xmin::text AS xmin FROM deliveries WHERE id = $1`, [id]);
  return rows[0];
}

beforeAll(async () => {
  // Leases far longer than any test: a delivery free again was given back, not expired.
  h = await startApi('edgerelease', { SECRETS_KEY, EDGE_LEASE_MS: '600000', EDGE_WORK_POLL_MS: '50' });
  tenantId = (await h.tenant()).tenantId;
  ({ server, url, sockets: serverSockets } = await listenTracked(h.api.app));
  conformance = createResponseChecker(h.api.openApi());
});

afterAll(async () => {
  await closeTracked(server);
  await h?.close();
});

describe('a work poll that cannot hand out what its lease statement leased gives it back', () => {
  it('the caller disconnects while the lease statement runs: no lease is left behind, no attempt recorded, and the next poll gets the delivery at once', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    const before = await stored(d.deliveryId);
    const body = JSON.stringify({ agent_id: 'gone-agent', agent_version: 'gone', nonce: randomBytes(8).toString('hex'), max: 10, wait_seconds: 0 });
    const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...signEdge(cluster.key, body) };
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    client.on('error', () => undefined);
    await new Promise<void>((r) => client.once('connect', () => r()));

    await withLeaseStatementBlocked(
      h.db.pool,
      () => {
        const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
        client.write(`POST ${workPath(cluster)} HTTP/1.1\r\nhost: 127.0.0.1\r\n${head}\r\n${body}`);
      },
      async () => {
        // The caller leaves; wait until the api's side of the connection is closed too.
        const mine = serverSockets.find((s) => s.remotePort === client.localPort)!;
        const closed = new Promise<void>((r) => (mine.destroyed ? r() : mine.once('close', () => r())));
        client.destroy();
        await closed;
      },
    );

    // The statement went on and leased the row (a new row version), and the lease went back:
    // the row was written since, and holds no lease.
    const after = await waitFor(
      async () => {
        const row = await stored(d.deliveryId);
        return row.xmin !== before.xmin && row.lease_owner === null ? row : null;
      },
      { timeoutMs: 10_000, what: 'the abandoned poll\'s lease to be given back' },
    );
    expect(after).toMatchObject({ lease_until: null, attempt_count: 0, status: 'pending' });
    expect(await attemptsOf(h.db.pool, d.deliveryId)).toEqual([]);
    const next = await work(cluster, 'next-agent');
    expect(next.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
    expect((await deliveryRow(h.db.pool, d.deliveryId)).lease_owner).toBe(next.body.deliveries[0].lease_owner);
  });
});

describe('a leased delivery that cannot be made ready to send', () => {
  it('a destination URL whose credentials do not decode fails its own attempt, as in the deliverer; the poll does not fail, give everything back and fail again for ever', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    // Accepted by the destinations API (a valid URL), but its user name is not percent-decodable.
    const url = 'http://us%ZZer:secret-pw@10.20.30.40:8080/hook';
    expect(() => new URL(url)).not.toThrow();
    const bad = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { url, nextAttemptAt: new Date(Date.now() - 60_000), config: { retry_schedule_ms: [3_600_000] } });
    const good = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    for (const agent of ['agent-a', 'agent-b']) {
      const res = await work(cluster, agent);
      expect(res.status).toBe(200);
      if (agent === 'agent-a') expect(res.body.deliveries.map((x: { id: string }) => x.id)).toEqual([good.deliveryId]);
      else expect(res.body.deliveries).toEqual([]);
    }
    // Nothing was sent: one failed attempt, recorded by the service, that names no credential.
    const attempts = await attemptsOf(h.db.pool, bad.deliveryId);
    expect(attempts).toEqual([expect.objectContaining({ number: 1, status_code: null, error_kind: 'connect', via: 'edge' })]);
    expect(JSON.stringify(attempts)).not.toContain('secret-pw');
    expect(await deliveryRow(h.db.pool, bad.deliveryId)).toMatchObject({ stored_status: 'failed', attempt_count: 1, lease_owner: null });
    // And, as in the deliverer, the failure counts against the destination's circuit.
    expect(await h.redis.hget(destinationHealthKey(h.prefix, bad.destinationId), 'failures')).toBe('1');
  });
});

describe('POST /v1/edge/clusters/{cid}/releases', () => {
  it('frees only the caller\'s current leases: not a reported one, a stale lease owner, another agent\'s, another cluster\'s or another tenant\'s', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const [free, stale, reported] = [
      await insertEdgeDelivery(h.db.pool, tenantId, cluster.id),
      await insertEdgeDelivery(h.db.pool, tenantId, cluster.id),
      await insertEdgeDelivery(h.db.pool, tenantId, cluster.id),
    ];
    const leased = (await work(cluster, 'agent-a')).body.deliveries as { id: string; lease_owner: string }[];
    expect(leased.map((x) => x.id).sort()).toEqual([free.deliveryId, stale.deliveryId, reported.deliveryId].sort());
    const owner = leased[0]!.lease_owner;
    expect(owner.startsWith(`edge@${cluster.id}:agent-a:`)).toBe(true);
    // One reported (its attempt recorded, the lease gone with it).
    const rep = await edgePost(url, `/v1/edge/clusters/${cluster.id}/reports`, cluster.key, {
      agent_id: 'agent-a',
      reports: [{ delivery_id: reported.deliveryId, lease_owner: owner, status_code: 200, response_body: 'ok', response_headers: {}, error_kind: null, error: null, started_at: new Date().toISOString(), duration_ms: 3 }],
    });
    expect(rep.body.results[0]).toMatchObject({ result: 'recorded' });
    // One whose lease expired and went to another agent: its old owner is stale.
    await h.db.pool.query(`UPDATE deliveries SET lease_until = now() - interval '1 second' WHERE id = $1`, [stale.deliveryId]);
    const again = (await work(cluster, 'agent-b')).body.deliveries as { id: string; lease_owner: string }[];
    expect(again.map((x) => x.id)).toEqual([stale.deliveryId]);
    // Another cluster's and another tenant's leases, whose owners the caller names.
    const otherCluster = await insertCluster(h.db.pool, tenantId);
    const theirs = await insertEdgeDelivery(h.db.pool, tenantId, otherCluster.id);
    const theirOwner = (await work(otherCluster, 'agent-a')).body.deliveries[0].lease_owner as string;
    const otherTenant = (await h.tenant()).tenantId;
    const foreignCluster = await insertCluster(h.db.pool, otherTenant);
    const foreign = await insertEdgeDelivery(h.db.pool, otherTenant, foreignCluster.id);
    const foreignOwner = (await work(foreignCluster, 'agent-a')).body.deliveries[0].lease_owner as string;

    // Another agent of the same cluster cannot give back agent-a's lease.
    const byOther = await release(cluster, 'agent-b', [{ delivery_id: free.deliveryId, lease_owner: owner }]);
    expect([byOther.status, byOther.body.results]).toEqual([200, [{ delivery_id: free.deliveryId, result: 'ignored', reason: 'not_leased' }]]);
    expect((await stored(free.deliveryId)).lease_owner).toBe(owner);

    const items = [
      { delivery_id: free.deliveryId, lease_owner: owner },
      { delivery_id: stale.deliveryId, lease_owner: owner },
      { delivery_id: reported.deliveryId, lease_owner: owner },
      { delivery_id: theirs.deliveryId, lease_owner: theirOwner },
      { delivery_id: foreign.deliveryId, lease_owner: foreignOwner },
      { delivery_id: 'dlv_unknown', lease_owner: owner },
    ];
    const res = await release(cluster, 'agent-a', items);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { delivery_id: free.deliveryId, result: 'released' },
      ...items.slice(1).map((i) => ({ delivery_id: i.delivery_id, result: 'ignored', reason: 'not_leased' })),
    ]);
    // Freed: no lease, no attempt, its attempt count and status as before the lease.
    expect(await stored(free.deliveryId)).toMatchObject({ lease_owner: null, lease_until: null, attempt_count: 0, status: 'pending' });
    expect(await attemptsOf(h.db.pool, free.deliveryId)).toEqual([]);
    // Untouched: the re-leased one keeps agent-b's lease, the reported one its outcome, the others their leases.
    expect((await stored(stale.deliveryId)).lease_owner).toBe(again[0]!.lease_owner);
    expect(await deliveryRow(h.db.pool, reported.deliveryId)).toMatchObject({ status: 'delivered', attempt_count: 1, lease_owner: null });
    expect((await stored(theirs.deliveryId)).lease_owner).toBe(theirOwner);
    expect((await stored(foreign.deliveryId)).lease_owner).toBe(foreignOwner);

    // Given back, the delivery goes to the next poll at once; repeating the release changes nothing.
    const next = await work(cluster, 'agent-c');
    expect(next.body.deliveries.map((x: { id: string }) => x.id)).toEqual([free.deliveryId]);
    const repeat = await release(cluster, 'agent-a', [{ delivery_id: free.deliveryId, lease_owner: owner }]);
    expect(repeat.body.results).toEqual([{ delivery_id: free.deliveryId, result: 'ignored', reason: 'not_leased' }]);
    expect((await stored(free.deliveryId)).lease_owner).toBe(next.body.deliveries[0].lease_owner);
  });

  it('an agent id that another agent\'s id extends ("dc-1" and "dc-1:b", ":" being allowed) does not reach that agent\'s leases', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    const owner = (await work(cluster, 'dc-1:b')).body.deliveries[0].lease_owner as string;
    expect(owner).toMatch(new RegExp(`^edge@${cluster.id}:dc-1:b:[0-9a-f]+$`));
    // "edge@<cid>:dc-1:" is a prefix of agent dc-1:b's lease owner, but the lease is not agent dc-1's.
    const byOther = await release(cluster, 'dc-1', [{ delivery_id: d.deliveryId, lease_owner: owner }]);
    expect(byOther.body.results).toEqual([{ delivery_id: d.deliveryId, result: 'ignored', reason: 'not_leased' }]);
    expect((await stored(d.deliveryId)).lease_owner).toBe(owner);
    // Its own agent can.
    expect((await release(cluster, 'dc-1:b', [{ delivery_id: d.deliveryId, lease_owner: owner }])).body.results).toEqual([{ delivery_id: d.deliveryId, result: 'released' }]);
  });

  it('refuses a malformed body with 400 problem details once the signature holds, changing nothing', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    const owner = (await work(cluster, 'agent-a')).body.deliveries[0].lease_owner as string;
    const before = await stored(d.deliveryId);
    const ok = { delivery_id: d.deliveryId, lease_owner: owner };
    const bad: [string, unknown, Record<string, unknown>, string][] = [
      ['no releases', undefined, {}, 'releases'],
      ['an empty list', [], {}, 'releases'],
      ['more than 1000', Array.from({ length: 1001 }, () => ok), {}, 'releases'],
      ['an item without its lease owner', [{ delivery_id: d.deliveryId }], {}, 'releases.0.lease_owner'],
      ['an item with an unknown field', [{ ...ok, status: 'delivered' }], {}, 'releases.0.status'],
      ['an id that is not a string', [{ delivery_id: 7, lease_owner: owner }], {}, 'releases.0.delivery_id'],
      ['an unknown top-level field', [ok], { max: 1 }, 'max'],
    ];
    for (const [what, releases, extra, field] of bad) {
      const res = await release(cluster, 'agent-a', releases, { extra });
      expect({ what, status: res.status, type: res.body.type }).toEqual({ what, status: 400, type: expect.stringMatching(/validation/) });
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
    // Not JSON: 415 before anything else.
    const text = await fetch(`${url}${releasePath(cluster)}`, { method: 'POST', headers: { 'content-type': 'text/plain', ...signEdge(cluster.key, 'x') }, body: 'x' });
    expect(text.status).toBe(415);
    expect(await stored(d.deliveryId)).toEqual(before);
  });

  it('refuses a bad, foreign or replayed signature with 401 problem details, changing nothing', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const other = await insertCluster(h.db.pool, tenantId);
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    const owner = (await work(cluster, 'agent-a')).body.deliveries[0].lease_owner as string;
    const before = await stored(d.deliveryId);
    const items = [{ delivery_id: d.deliveryId, lease_owner: owner }];
    const refused = [
      await release(cluster, 'agent-a', items, { key: other.key }),
      await release(cluster, 'agent-a', items, { headers: { 'x-service-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` } }),
      await release(cluster, 'agent-a', items, { headers: signEdge(cluster.key, 'another body') }),
      await release(cluster, 'agent-a', items, { headers: signEdge(cluster.key, '{}', Math.floor(Date.now() / 1000) - 3600) }),
      await release({ id: 'cls_unknown', key: cluster.key }, 'agent-a', items),
    ];
    for (const res of refused) {
      expect(res.status).toBe(401);
      expect(res.text).not.toContain(d.deliveryId);
    }
    // A captured request replayed: the first is taken, the copy refused.
    const body = JSON.stringify({ agent_id: 'agent-a', agent_version: 't', nonce: randomBytes(8).toString('hex'), releases: [{ delivery_id: 'dlv_none', lease_owner: owner }] });
    const signed = { 'content-type': 'application/json', ...signEdge(cluster.key, body) };
    expect((await fetch(`${url}${releasePath(cluster)}`, { method: 'POST', headers: signed, body })).status).toBe(200);
    expect((await fetch(`${url}${releasePath(cluster)}`, { method: 'POST', headers: signed, body })).status).toBe(401);
    expect(await stored(d.deliveryId)).toEqual(before);
    // The right key, once: released.
    expect((await release(cluster, 'agent-a', items)).body.results).toEqual([{ delivery_id: d.deliveryId, result: 'released' }]);
  });
});

// Last: the api stays draining.
describe('while the api drains', () => {
  it('a drain that starts while the lease statement runs: the answer is empty and the leases go back at once', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    let pending: Promise<EdgeCall> | undefined;
    await withLeaseStatementBlocked(
      h.db.pool,
      () => {
        pending = work(cluster, 'drained-agent', { wait_seconds: 5 });
      },
      async () => h.api.setDraining(),
    );
    const got = await pending!;
    expect([got.status, got.body.deliveries]).toEqual([200, []]);
    expect(await stored(d.deliveryId)).toMatchObject({ lease_owner: null, lease_until: null, attempt_count: 0, status: 'pending' });
    expect(await attemptsOf(h.db.pool, d.deliveryId)).toEqual([]);
  });
});
