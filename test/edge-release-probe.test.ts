// A half-open circuit's probe given back unsent on the edge path: released by the agent
// (`POST …/releases`), given back by a work poll whose caller left, or refused before sending
// (signing_unavailable). Its probe slot is freed at once, so the next poll hands a probe out
// again instead of holding the destination back until the probe's lease has passed. The api
// in-process on loopback, real PostgreSQL and Redis; time is driven through the Redis state
// and next_attempt_at, never by waiting.
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { createLogger } from '@hookline/logger';
import { destinationHealthKey, readDestinationHealthState } from '@hookline/queues';
import { newLeaseOwner, type WorkItem } from '@hookline/delivery';
import { createSecretBox } from '@hookline/signing';
import { waitFor } from '@hookline/testing';
import { loadEdgeConfig } from '../services/api/src/edge/edge-config';
import { createEdgeDeps, type EdgeDeps } from '../services/api/src/edge/edge-deps';
import { leaseWork } from '../services/api/src/edge/lease-work';
import { releaseAgentLeases } from '../services/api/src/edge/release-leases';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, deliveryRow, edgePost, insertCluster, insertEdgeDelivery, closeTracked, listenTracked, withLeaseStatementBlocked, SECRETS_KEY, signEdge } from './edge-fixtures';

jest.setTimeout(30_000);

const COOLDOWN_MS = 600_000;
// Leases (and so a probe's time in flight) far longer than any test; a cooldown no test waits for.
const ENV = { SECRETS_KEY, EDGE_LEASE_MS: '600000', EDGE_WORK_POLL_MS: '50', BREAKER_FAILURE_THRESHOLD: '3', BREAKER_COOLDOWN_MS: String(COOLDOWN_MS) };

let h: ApiHarness;
let server: Server;
let url: string;
let serverSockets: Socket[] = [];
let tenantId: string;

type Cluster = { id: string; key: string; sealed: string };
const workPath = (c: Cluster) => `/v1/edge/clusters/${c.id}/work`;

beforeAll(async () => {
  h = await startApi('edgeprobe', ENV);
  tenantId = (await h.tenant()).tenantId;
  ({ server, url, sockets: serverSockets } = await listenTracked(h.api.app));
});

afterAll(async () => {
  await closeTracked(server);
  await h?.close();
});

function edgeDeps(over: Partial<EdgeDeps> = {}): EdgeDeps {
  const draining = new AbortController().signal;
  const deps = createEdgeDeps({ pool: h.db.pool, redis: h.redis, prefix: h.prefix, logger: createLogger('edge-release-probe-test', 'error'), box: createSecretBox(SECRETS_KEY), draining }, loadEdgeConfig(ENV));
  return { ...deps, ...over };
}

async function work(c: Cluster, agentId: string): Promise<WorkItem[]> {
  const res = await edgePost(url, workPath(c), c.key, { agent_id: agentId, max: 10, wait_seconds: 0 });
  expect(res.status).toBe(200);
  return res.body.deliveries;
}

/** A cluster destination with one due delivery, whose circuit opened a cooldown ago: the next poll may send the probe. */
async function coolingDown(opts: Parameters<typeof insertEdgeDelivery>[3] = {}): Promise<{ cluster: Cluster; destinationId: string; deliveryId: string; key: string }> {
  const cluster = await insertCluster(h.db.pool, tenantId);
  const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { config: { retry_schedule_ms: [3_600_000] }, ...opts });
  const key = destinationHealthKey(h.prefix, d.destinationId);
  await h.redis.hset(key, 'state', 'open', 'failures', '3', 'opened_at', String(Date.now() - COOLDOWN_MS - 1));
  return { cluster, destinationId: d.destinationId, deliveryId: d.deliveryId, key };
}

/** The probe is out: half-open, with its slot held until well after now. */
async function expectProbeOut(key: string): Promise<void> {
  const [state, probeUntil] = await h.redis.hmget(key, 'state', 'probe_until');
  expect(state).toBe('half_open');
  expect(Number(probeUntil)).toBeGreaterThan(Date.now());
}

describe('a half-open probe given back unsent frees its probe slot', () => {
  it('released by the agent: the next poll hands the probe out again at once', async () => {
    const { cluster, destinationId, deliveryId, key } = await coolingDown();
    const probe = await work(cluster, 'agent-a');
    expect(probe.map((d) => d.id)).toEqual([deliveryId]);
    await expectProbeOut(key);

    const res = await edgePost(url, `/v1/edge/clusters/${cluster.id}/releases`, cluster.key, { agent_id: 'agent-a', releases: [{ delivery_id: deliveryId, lease_owner: probe[0]!.lease_owner }] });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([{ delivery_id: deliveryId, result: 'released' }]);
    // Still half-open (nothing was sent, so nothing was learnt), but no probe out.
    expect(await h.redis.hmget(key, 'state', 'probe_until')).toEqual(['half_open', null]);

    const again = await work(cluster, 'agent-b');
    expect(again.map((d) => d.id)).toEqual([deliveryId]);
    await expectProbeOut(key);
    expect(await attemptsOf(h.db.pool, deliveryId)).toEqual([]);
    expect((await readDestinationHealthState(h.redis, h.prefix, destinationId)).state).toBe('half_open');
  });

  it('given back by a work poll whose caller left: the next poll hands the probe out again at once', async () => {
    const { cluster, deliveryId, key } = await coolingDown();
    const body = JSON.stringify({ agent_id: 'gone-agent', agent_version: 'gone', nonce: randomBytes(8).toString('hex'), max: 10, wait_seconds: 0 });
    const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...signEdge(cluster.key, body) };
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    client.on('error', () => undefined);
    await new Promise<void>((r) => client.once('connect', () => r()));

    // The lease statement is held on a lock until the caller has left (as in edge-release.test.ts).
    const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    await withLeaseStatementBlocked(
      h.db.pool,
      () => client.write(`POST ${workPath(cluster)} HTTP/1.1\r\nhost: 127.0.0.1\r\n${head}\r\n${body}`),
      async () => {
        const mine = serverSockets.find((s) => s.remotePort === client.localPort)!;
        const closed = new Promise<void>((r) => (mine.destroyed ? r() : mine.once('close', () => r())));
        client.destroy();
        await closed;
      },
    );

    // The poll leased the delivery, its gate let it through as the probe, and it went back
    // unsent: released, and the circuit half-open with no probe out.
    await waitFor(
      async () => {
        const [state, probeUntil] = await h.redis.hmget(key, 'state', 'probe_until');
        return state === 'half_open' && probeUntil === null && (await deliveryRow(h.db.pool, deliveryId)).lease_owner === null;
      },
      { timeoutMs: 10_000, what: 'the abandoned poll\'s probe to be given back with its probe slot' },
    );
    expect(await work(cluster, 'next-agent')).toEqual([expect.objectContaining({ id: deliveryId })]);
    await expectProbeOut(key);
    expect(await attemptsOf(h.db.pool, deliveryId)).toEqual([]);
  });

  it('refused before sending (signing_unavailable): its attempt is recorded and the probe slot freed', async () => {
    const { cluster, deliveryId, destinationId, key } = await coolingDown();
    // A secret that does not open with SECRETS_KEY.
    await h.db.pool.query(`UPDATE destinations SET secrets = ARRAY[$2] WHERE id = $1`, [destinationId, createSecretBox('another-secrets-key-0123456789abcdef').seal('whsec')]);
    expect(await work(cluster, 'agent-a')).toEqual([]);
    expect(await attemptsOf(h.db.pool, deliveryId)).toEqual([expect.objectContaining({ number: 1, error_kind: 'signing_unavailable' })]);
    expect(await h.redis.hmget(key, 'state', 'probe_until')).toEqual(['half_open', null]);
  });

  it('leaves an open or closed circuit, and a probe reported meanwhile, as they are', async () => {
    const deps = edgeDeps();
    const { cluster, destinationId, deliveryId, key } = await coolingDown();
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const leased = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10 });
    expect(leased.deliveries.map((d) => d.id)).toEqual([deliveryId]);
    // The circuit reopened meanwhile (say, the deliverer's probe failed): a release does not touch it.
    const openedAt = String(Date.now());
    await h.redis.hset(key, 'state', 'open', 'opened_at', openedAt, 'probe_until', '123');
    const results = await releaseAgentLeases(deps, c, 'agent-a', [{ delivery_id: deliveryId, lease_owner: leased.deliveries[0]!.lease_owner }]);
    expect(results).toEqual([{ delivery_id: deliveryId, result: 'released' }]);
    expect(await h.redis.hmget(key, 'state', 'opened_at', 'probe_until')).toEqual(['open', openedAt, '123']);
    // A closed circuit stays closed; an unknown destination gets no key.
    await h.redis.del(key);
    const owner = leased.deliveries[0]!.lease_owner;
    expect(await deps.breaker.giveBack([{ destinationId, deliveryId, leaseOwner: owner }, { destinationId: 'dst_unknown', deliveryId: 'dlv_unknown', leaseOwner: owner }])).toEqual({ probesFreed: 0, tokensReturned: 0 });
    expect(await h.redis.exists(key, destinationHealthKey(h.prefix, 'dst_unknown'))).toBe(0);
  });

  it('fails open: when Redis cannot answer, the release still goes through and says so', async () => {
    const { cluster, deliveryId, key } = await coolingDown();
    const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
    const leased = await leaseWork(edgeDeps(), c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10 });
    expect(leased.deliveries.map((d) => d.id)).toEqual([deliveryId]);
    const warnings: string[] = [];
    const quiet = (): void => undefined;
    const logger = { warn: (msg: string) => warnings.push(msg), info: quiet, debug: quiet, error: quiet, child: () => logger };
    const broken: EdgeDeps['breaker'] = { ...edgeDeps().breaker, giveBack: () => Promise.reject(new Error('Connection is closed.')) };
    const results = await releaseAgentLeases(edgeDeps({ breaker: broken, logger: logger as unknown as EdgeDeps['logger'] }), c, 'agent-a', [{ delivery_id: deliveryId, lease_owner: leased.deliveries[0]!.lease_owner }]);
    expect(results).toEqual([{ delivery_id: deliveryId, result: 'released' }]);
    expect((await deliveryRow(h.db.pool, deliveryId)).lease_owner).toBeNull();
    expect(warnings).toEqual(['could not return the probe slots and rate tokens of deliveries given back unsent; they expire']);
    // The slot then expires with the probe's lease, as before.
    await expectProbeOut(key);
  });
});
