// The work long-poll leases nothing that could not reach its agent: not for a caller that
// already left, and not once the api drains (a response cut at the drain deadline would
// strand its leases until they expire). The api in-process on loopback, real PostgreSQL/Redis.
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';
import { deliveryRow, edgePost, insertCluster, insertEdgeDelivery, closeTracked, listenTracked, SECRETS_KEY, signEdge } from './edge-fixtures';

// A waiting long-poll that is not woken by the drain would run its whole 30 s wait past this.
jest.setTimeout(15_000);

let h: ApiHarness;
let server: Server;
let url: string;
let tenantId: string;
/** The api's side of each connection, to see when it has noticed a caller leave. */
let serverSockets: Socket[] = [];

const workPath = (clusterId: string) => `/v1/edge/clusters/${clusterId}/work`;
const work = (c: { id: string; key: string }, payload: Record<string, unknown>) => edgePost(url, workPath(c.id), c.key, { max: 10, wait_seconds: 0, ...payload });
const lastSeen = async (clusterId: string) => (await h.db.pool.query(`SELECT last_seen_at, agent_version FROM clusters WHERE id = $1`, [clusterId])).rows[0];

beforeAll(async () => {
  // The long wait between looks shows a waiting poll is woken by the drain, not by its next look.
  h = await startApi('edgedrain', { SECRETS_KEY, EDGE_WORK_POLL_MS: '60000', EDGE_LEASE_MS: '60000' });
  tenantId = (await h.tenant()).tenantId;
  ({ server, url, sockets: serverSockets } = await listenTracked(h.api.app));
});

afterAll(async () => {
  await closeTracked(server);
  await h?.close();
});

it('leases nothing for a caller that left while its request was being authenticated', async () => {
  const cluster = await insertCluster(h.db.pool, tenantId);
  const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
  // Hold the cluster row: the request stops in its `last seen` write, before the work loop.
  const holder = await h.db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM clusters WHERE id = $1 FOR UPDATE', [cluster.id]);
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

    const body = JSON.stringify({ agent_id: 'gone-agent', agent_version: 'gone', nonce: randomBytes(8).toString('hex'), max: 10, wait_seconds: 0 });
    const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...signEdge(cluster.key, body) };
    const { port } = server.address() as AddressInfo;
    const client = connect(port, '127.0.0.1');
    client.on('error', () => undefined);
    await new Promise<void>((r) => client.once('connect', () => r()));
    const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    client.write(`POST ${workPath(cluster.id)} HTTP/1.1\r\nhost: 127.0.0.1\r\n${head}\r\n${body}`);
    await waitFor(
      async () => (await h.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [holderPid])).rowCount === 1,
      { what: 'the work request to wait on the cluster row' },
    );
    // The caller leaves; wait until the api's side of the connection is closed too.
    const mine = serverSockets.find((s) => s.remotePort === client.localPort)!;
    const closed = new Promise<void>((r) => (mine.destroyed ? r() : mine.once('close', () => r())));
    client.destroy();
    await closed;
    await holder.query('COMMIT');
  } finally {
    holder.release();
  }
  // The request went on past its `last seen` write, to where it would have leased.
  await waitFor(async () => (await lastSeen(cluster.id)).agent_version === 'gone', { what: 'the abandoned request to go on' });
  // The delivery was not stranded under a lease nobody holds: the next poll gets it at once.
  const next = await work(cluster, {});
  expect(next.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
  expect((await deliveryRow(h.db.pool, d.deliveryId)).lease_owner).toBe(next.body.deliveries[0].lease_owner);
});

describe('while the api drains', () => {
  it('a long-poll already waiting answers at once with no work, and leases nothing', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const pending = work(cluster, { wait_seconds: 30, agent_version: 'waiting' });
    // Seen: the request is in its work loop (looking, or waiting for its next look).
    await waitFor(async () => (await lastSeen(cluster.id)).agent_version === 'waiting', { what: 'the long-poll to start waiting' });
    h.api.setDraining();
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    const got = await pending;
    expect([got.status, got.body.deliveries]).toEqual([200, []]);
    expect(await deliveryRow(h.db.pool, d.deliveryId)).toMatchObject({ status: 'pending', lease_owner: null });
  });

  it('a new work request answers at once with no work, though deliveries are due', async () => {
    const cluster = await insertCluster(h.db.pool, tenantId);
    const d = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id);
    const got = await work(cluster, { wait_seconds: 30 });
    expect([got.status, got.body.deliveries]).toEqual([200, []]);
    expect(await deliveryRow(h.db.pool, d.deliveryId)).toMatchObject({ status: 'pending', lease_owner: null });
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
  });
});
