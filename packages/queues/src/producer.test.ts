// Producers fail fast while Redis is down (BullMQ's production guide): a caller must be able
// to answer, or leave the work to a recovery sweep, instead of hanging. On loopback only: a
// closed port, and a private redis-server stopped under a connected producer.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, waitFor } from '@hookline/testing';
import { createProducer } from './producer';
import { createRedis, type Redis } from './redis';
import { createWorker } from './worker';

const HUNG = Symbol('hung');
/** The promise's outcome, or HUNG when it has not settled after `ms` (a hang, not a timing). */
async function settle<T>(p: Promise<T>, ms = 15_000): Promise<{ ok: true; value: T } | { ok: false; error: Error } | typeof HUNG> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<typeof HUNG>((r) => (timer = setTimeout(() => r(HUNG), ms)));
  try {
    return await Promise.race([p.then((value) => ({ ok: true as const, value }), (error: Error) => ({ ok: false as const, error })), hung]);
  } finally {
    clearTimeout(timer);
  }
}

function startRedisServer(port: number): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
}

const clients: Redis[] = [];
const client = (url: string, role: 'producer' | 'worker' = 'producer', nodes?: string): Redis => {
  const c = createRedis(url, role, nodes);
  clients.push(c);
  return c;
};
afterAll(() => clients.forEach((c) => c.disconnect()));

describe('createProducer', () => {
  it('rejects an add when Redis never answered, instead of waiting for it', async () => {
    const producer = createProducer(client(`redis://127.0.0.1:${await freePort()}`), '{hltest-nored}', { readyTimeoutMs: 200 });
    const out = await settle(producer.add('route', { v: 1, eventIds: ['evt_1'] }));
    expect(out).not.toBe(HUNG);
    expect(out).toMatchObject({ ok: false, error: { message: expect.stringContaining('Redis is not connected') } });
    await producer.close();
  });

  it('rejects while a connected Redis is down (also on a queue used for the first time), and adds again once it is back', async () => {
    const port = await freePort();
    let server = startRedisServer(port);
    try {
      const redis = client(`redis://127.0.0.1:${port}`);
      await waitFor(() => redis.status === 'ready', { what: 'the private redis-server' });
      const producer = createProducer(redis, '{hltest-down}', { readyTimeoutMs: 200 });
      await producer.add('route', { v: 1, eventIds: ['evt_before'] });

      server.kill('SIGKILL');
      await waitFor(() => redis.status !== 'ready', { what: 'the producer to see Redis gone' });
      for (const add of [() => producer.add('route', { v: 1, eventIds: ['evt_down'] }), () => producer.add('deliver', { v: 1, deliveryIds: ['dlv_down'] }, { pool: 'acme' })]) {
        const out = await settle(add());
        expect(out).not.toBe(HUNG);
        expect(out).toMatchObject({ ok: false });
      }

      server = startRedisServer(port);
      await waitFor(() => redis.status === 'ready', { what: 'the producer to reconnect', timeoutMs: 30_000 });
      await producer.add('deliver', { v: 1, deliveryIds: ['dlv_after'] }, { pool: 'acme' });
      expect((await producer.queue('deliver', 'acme').getJobs(['waiting'])).map((j) => j.data)).toEqual([{ v: 1, deliveryIds: ['dlv_after'] }]);
      await producer.close();
    } finally {
      server.kill('SIGKILL');
    }
  });

  it('refuses a Redis Cluster prefix without a {hash tag}, naming QUEUE_PREFIX', async () => {
    const nodes = `127.0.0.1:${await freePort()}`;
    const cluster = client('redis://127.0.0.1:6379', 'producer', nodes);
    expect(() => createProducer(cluster, 'hookline')).toThrow(/QUEUE_PREFIX "hookline" has no \{hash tag\}.*REDIS_CLUSTER_NODES/);
    expect(() => createWorker('route', client('redis://127.0.0.1:6379', 'worker', nodes), 'hookline', 1, async () => undefined, () => undefined)).toThrow(/QUEUE_PREFIX/);
    expect(() => createProducer(cluster, '{hookline}')).not.toThrow();
  });
});
