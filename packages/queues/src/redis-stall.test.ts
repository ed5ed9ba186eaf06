// A stalled Redis (the connection stays open, no reply comes: hung, overloaded, or a
// partition without RST) must not hold a producer's callers for ever: its commands give up
// after REDIS_COMMAND_TIMEOUT_MS, while worker connections (blocking fetches, subscribers)
// keep waiting. Through a loopback proxy in front of the test Redis that can be stalled.
import type { Cluster } from 'ioredis';
import { baseEnv, loadConfig } from '@hookline/config';
import { flushPrefix, startRedisProxy, uniquePrefix, waitFor, type RedisProxy } from '@hookline/testing';
import { createProducer } from './producer';
import { createRedis, DEFAULT_REDIS_COMMAND_TIMEOUT_MS, redisReady, type Redis } from './redis';

jest.setTimeout(60_000);

const prefix = uniquePrefix('stall');
const TIMEOUT_MS = 300;
let proxy: RedisProxy;
const clients: Redis[] = [];
const client = (role: 'producer' | 'worker'): Redis => {
  const c = createRedis(proxy.url, role, undefined, { commandTimeoutMs: TIMEOUT_MS });
  clients.push(c);
  return c;
};

beforeEach(async () => {
  proxy = await startRedisProxy();
});
afterEach(async () => {
  proxy.resume();
  clients.splice(0).forEach((c) => c.disconnect());
  await proxy.close();
});
afterAll(async () => {
  await flushPrefix(prefix);
});

test('a producer command, script and enqueue through a stalled Redis reject with a timeout instead of waiting for ever', async () => {
  const redis = client('producer');
  expect(await redisReady(redis, 20_000)).toBe(true);
  const producer = createProducer(redis, prefix);
  await producer.add('route', { v: 1, eventIds: ['evt_before'] });
  proxy.stall();
  await expect(redis.ping()).rejects.toThrow('Command timed out');
  await expect(redis.eval('return 1', 0)).rejects.toThrow('Command timed out');
  await expect(producer.add('route', { v: 1, eventIds: ['evt_stalled'] })).rejects.toThrow('Command timed out');
  // Still connected: the socket never closed, so only the timeout could end these.
  expect(redis.status).toBe('ready');
  await producer.close();
});

test('once Redis answers again the producer works, also on a queue it first used during the stall', async () => {
  const redis = client('producer');
  expect(await redisReady(redis, 20_000)).toBe(true);
  const producer = createProducer(redis, prefix);
  proxy.stall();
  // The deliver queue's setup (its first commands) times out along with the add.
  await expect(producer.add('deliver', { v: 1, deliveryIds: ['dlv_stalled'] }, { pool: 'stall' })).rejects.toThrow('Command timed out');
  proxy.resume();
  expect(await redis.ping()).toBe('PONG');
  await producer.add('deliver', { v: 1, deliveryIds: ['dlv_after'] }, { pool: 'stall' });
  const ids = (await producer.queue('deliver', 'stall').getJobs(['waiting'])).map((j) => (j.data as { deliveryIds: string[] }).deliveryIds[0]);
  expect(ids).toContain('dlv_after');
  await producer.close();
});

test('a worker connection has no command timeout: its command waits out the stall and gets its reply', async () => {
  const worker = client('worker');
  const producer = client('producer');
  expect(await redisReady(producer, 20_000)).toBe(true);
  await waitFor(() => worker.status === 'ready', { what: 'the worker connection' });
  proxy.stall();
  let workerReply: string | Error | undefined;
  const pending = worker.ping().then((r) => (workerReply = r), (e: Error) => (workerReply = e));
  // Sent after the worker's, timed out: the worker's is still waiting, with no error.
  await expect(producer.ping()).rejects.toThrow('Command timed out');
  expect(workerReply).toBeUndefined();
  proxy.resume();
  await pending;
  expect(workerReply).toBe('PONG');
});

test('the timeout applies to producer connections only, on a Cluster client too (each node gets redisOptions)', () => {
  // Options only: the test Redis is no cluster (its connection is closed again at once).
  const nodes = '127.0.0.1:6379';
  const cluster = (role: 'producer' | 'worker', o = {}) => {
    const c = createRedis('redis://127.0.0.1:6379', role, nodes, o) as unknown as Cluster;
    clients.push(c as unknown as Redis);
    return c;
  };
  expect(cluster('producer', { commandTimeoutMs: 1234 }).options.redisOptions?.commandTimeout).toBe(1234);
  expect(cluster('producer').options.redisOptions?.commandTimeout).toBe(DEFAULT_REDIS_COMMAND_TIMEOUT_MS);
  expect(cluster('worker', { commandTimeoutMs: 1234 }).options.redisOptions?.commandTimeout).toBeUndefined();
  const single = (role: 'producer' | 'worker') => {
    const c = createRedis('redis://127.0.0.1:6379', role, undefined, { commandTimeoutMs: 1234 });
    clients.push(c);
    return c;
  };
  expect(single('producer').options.commandTimeout).toBe(1234);
  expect(single('worker').options.commandTimeout).toBeUndefined();
  // The services pass REDIS_COMMAND_TIMEOUT_MS; its default is the one used without it.
  expect(loadConfig(baseEnv, {}).REDIS_COMMAND_TIMEOUT_MS).toBe(DEFAULT_REDIS_COMMAND_TIMEOUT_MS);
});
