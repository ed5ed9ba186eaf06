// REDIS_CLUSTER_NODES: a real three-node Redis Cluster on loopback (redis-server and
// redis-cli from the test machine), BullMQ queues under the `{…}` hash tag, and a router
// process that takes its work through the cluster.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { createLogger } from '@hookline/logger';
import { createMetrics, startQueueSampler } from '@hookline/observability';
import { createProducer, createRedis, createWorker, isClusterClient, onConfigChange, publishConfigChange, type ConfigChange, type Redis } from '@hookline/queues';
import { createTestDatabase, freePort, startService, uniquePrefix, waitFor, type TestDatabase } from '@hookline/testing';
import { seedPipeline } from './support/seed-pipeline';

jest.setTimeout(90_000);
const run = promisify(execFile);

let dir: string;
let servers: ChildProcess[] = [];
let ports: number[] = [];
let nodes: string;
const clients: Redis[] = [];
const client = (role: 'worker' | 'producer'): Redis => {
  const c = createRedis(`redis://127.0.0.1:${ports[0]}`, role, nodes);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hookline-cluster-'));
  ports = [await freePort(), await freePort(), await freePort()];
  servers = ports.map((port) =>
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' }),
  );
  await waitFor(async () => (await Promise.all(ports.map((p) => run('redis-cli', ['-p', String(p), 'ping']).then((r) => r.stdout.trim() === 'PONG')))).every(Boolean), { what: 'redis-server nodes' });
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
  await waitFor(async () => (await Promise.all(ports.map((p) => run('redis-cli', ['-p', String(p), 'cluster', 'info']).then((r) => r.stdout.includes('cluster_state:ok'))))).every(Boolean), { what: 'the cluster' });
  nodes = ports.map((p) => `127.0.0.1:${p}`).join(',');
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const s of servers) s.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('createRedis gives a Cluster client only when REDIS_CLUSTER_NODES is set', () => {
  const single = createRedis('redis://127.0.0.1:6379', 'producer');
  try {
    expect(isClusterClient(single)).toBe(false);
  } finally {
    single.disconnect();
  }
  const cluster = client('producer');
  expect(isClusterClient(cluster)).toBe(true);
  expect(cluster).toBeInstanceOf(Cluster);
});

test('BullMQ queues, pool queues, the queue sampler and config announcements work through the cluster, all keys in one slot', async () => {
  const prefix = uniquePrefix('cluster');
  // A producer fails fast while not connected (enableOfflineQueue: false), so wait for it.
  const producerRedis = client('producer');
  await waitFor(() => producerRedis.status === 'ready', { what: 'the cluster client' });
  const producer = createProducer(producerRedis, prefix);
  const seen: string[] = [];
  const worker = createWorker('deliver', client('worker'), prefix, 2, async (data) => void seen.push(...data.deliveryIds), () => undefined, { pool: 'acme' });
  try {
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_c1'] }, { pool: 'acme' });
    await producer.add('route', { v: 1, eventIds: ['evt_c1'] });
    await waitFor(() => seen.includes('dlv_c1'), { what: 'the job through the cluster' });

    const metrics = createMetrics('router', { defaultMetrics: false });
    const sampler = startQueueSampler({ producer, metrics, logger: createLogger('test', 'error') }, [{ name: 'route' }], 60_000);
    await sampler.sample();
    await sampler.stop();
    expect(await metrics.registry.metrics()).toContain('hookline_queue_depth{queue="route",state="waiting",service="router"} 1');

    const any = producerRedis;
    const keys = (await Promise.all(ports.map((p) => run('redis-cli', ['-p', String(p), '--scan', '--pattern', `${prefix}*`])))).flatMap((r) => r.stdout.split('\n').filter(Boolean));
    expect(keys.length).toBeGreaterThan(3);
    const slots = new Set(await Promise.all(keys.map((k) => any.call('CLUSTER', 'KEYSLOT', k))));
    expect(slots.size).toBe(1);

    const got: ConfigChange[] = [];
    await onConfigChange(client('worker'), prefix, (c) => got.push(c));
    await publishConfigChange(any, prefix, { kind: 'flow', id: 'flw_1', tenantId: 'ten_1' });
    await waitFor(() => got.length === 1, { what: 'the announcement' });
  } finally {
    await worker.close();
    await producer.close();
  }
});

describe('a service process with REDIS_CLUSTER_NODES', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('cluster');
  });
  afterAll(() => db.drop());

  test('the router becomes ready and routes a job it takes from the cluster', async () => {
    const prefix = uniquePrefix('clusterproc');
    const pipe = await seedPipeline(db.pool, 'http://127.0.0.1:9/never');
    const router = await startService('router', { DATABASE_URL: db.url, REDIS_URL: `redis://127.0.0.1:${ports[0]}`, REDIS_CLUSTER_NODES: nodes, QUEUE_PREFIX: prefix, DB_POOL_MAX: '2' });
    const producerRedis = client('producer');
    await waitFor(() => producerRedis.status === 'ready', { what: 'the cluster client' });
    const producer = createProducer(producerRedis, prefix);
    try {
      const eventId = `evt_cluster${Date.now()}`;
      await db.pool.query(`INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id, received_at, validated_at) VALUES ($1, $2, $3, 'validated', $4, now(), now())`, [eventId, pipe.tenantId, pipe.ingesterId, 'c'.repeat(32)]);
      await db.pool.query(`INSERT INTO event_payloads (event_id, tenant_id, body) VALUES ($1, $2, $3)`, [eventId, pipe.tenantId, Buffer.from('{}')]);
      await producer.add('route', { v: 1, eventIds: [eventId] });
      await waitFor(async () => (await producer.queue('deliver').getJobCounts('waiting')).waiting === 1, { what: 'the deliver job in the cluster' });
      const { rows } = await db.pool.query('SELECT status FROM events WHERE id = $1', [eventId]);
      expect(rows[0].status).toBe('filtered');
    } finally {
      await producer.close();
      expect(await router.stop()).toBe(0);
    }
  });
});
