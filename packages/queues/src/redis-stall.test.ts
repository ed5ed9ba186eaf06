// A stalled Redis (the connection stays open, no reply comes: hung, overloaded, or a
// partition without RST) must not hold a producer's callers for ever: its commands give up
// after REDIS_COMMAND_TIMEOUT_MS and its stalled connection is dropped and made again,
// while worker connections (blocking fetches, subscribers) keep waiting. Through a loopback
// proxy in front of the test Redis that can be stalled (it holds every byte back, as a
// partition whose TCP retransmits get through once it heals).
import type { Cluster, RedisOptions } from 'ioredis';
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
  // All sent at once, while the connection is still up: each ends by its own command
  // timeout ("Command timed out"; the connection being dropped after the same time ends
  // none of them, as its commands are not sent again), not by waiting for ever.
  const started = Date.now();
  await Promise.all([
    expect(redis.ping()).rejects.toThrow('Command timed out'),
    expect(redis.eval('return 1', 0)).rejects.toThrow('Command timed out'),
    expect(producer.add('route', { v: 1, eventIds: ['evt_stalled'] })).rejects.toThrow('Command timed out'),
  ]);
  expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2000);
  await producer.close();
  // (Connected again before the client is closed: ioredis leaves a timer behind otherwise.)
  await waitFor(() => redis.status !== 'ready', { what: 'the stalled connection to be dropped', timeoutMs: 5000 });
  proxy.resume();
  expect(await redisReady(redis, 20_000)).toBe(true);
});

test('a stalled producer connection is dropped and made again: once Redis answers it works, also on a queue first used during the stall, and what timed out never runs', async () => {
  const redis = client('producer');
  expect(await redisReady(redis, 20_000)).toBe(true);
  const before = await redis.client('ID');
  let dropped = false;
  redis.on('close', () => (dropped = true));
  const key = `${prefix}:late`;
  const producer = createProducer(redis, prefix);
  proxy.stall();
  // The deliver queue's setup (its first commands) times out along with the add.
  await Promise.all([
    expect(redis.incr(key)).rejects.toThrow('Command timed out'),
    expect(producer.add('deliver', { v: 1, deliveryIds: ['dlv_stalled'] }, { pool: 'stall' })).rejects.toThrow('Command timed out'),
  ]);
  // Without a socket timeout the connection would stay open until the kernel gives up on it.
  await waitFor(() => dropped, { what: 'the stalled producer connection to be dropped', timeoutMs: 5000 });
  // Until a new connection is up a command fails at once, as with Redis down.
  const sent = Date.now();
  await expect(redis.ping()).rejects.toThrow("Stream isn't writeable");
  expect(Date.now() - sent).toBeLessThan(TIMEOUT_MS);
  proxy.resume();
  expect(await redisReady(redis, 20_000)).toBe(true);
  expect(await redis.ping()).toBe('PONG');
  expect(await redis.client('ID')).not.toBe(before);
  await producer.add('deliver', { v: 1, deliveryIds: ['dlv_after'] }, { pool: 'stall' });
  const ids = (await producer.queue('deliver', 'stall').getJobs(['waiting'])).map((j) => (j.data as { deliveryIds: string[] }).deliveryIds[0]);
  expect(ids).toContain('dlv_after');
  // The commands that timed out had not reached Redis: the old socket took them along
  // (they are not delivered once the stall ends) and they are not sent again on the new one.
  expect(ids).not.toContain('dlv_stalled');
  expect(await redis.get(key)).toBeNull();
  await producer.close();
});

test('a worker connection has no command or socket timeout: its command waits out the stall, on the same connection, and gets its reply', async () => {
  const worker = client('worker');
  const producer = client('producer');
  expect(await redisReady(producer, 20_000)).toBe(true);
  await waitFor(() => worker.status === 'ready', { what: 'the worker connection' });
  const closed: string[] = [];
  worker.on('close', () => closed.push('worker'));
  producer.on('close', () => closed.push('producer'));
  proxy.stall();
  let workerReply: string | Error | undefined;
  const pending = worker.ping().then((r) => (workerReply = r), (e: Error) => (workerReply = e));
  // Sent after the worker's, timed out: the worker's is still waiting, with no error.
  await expect(producer.ping()).rejects.toThrow('Command timed out');
  // Stalled past the socket timeout: the producer's connection is dropped, the worker's stays.
  await waitFor(() => closed.includes('producer'), { what: 'the producer connection to be dropped', timeoutMs: 5000 });
  await new Promise((r) => setTimeout(r, TIMEOUT_MS));
  expect(workerReply).toBeUndefined();
  expect(closed).not.toContain('worker');
  proxy.resume();
  await pending;
  expect(workerReply).toBe('PONG');
  expect(closed).not.toContain('worker');
  expect(await redisReady(producer, 20_000)).toBe(true);
});

test('the command and socket timeouts apply to producer connections only, on a Cluster client too (each node gets redisOptions)', () => {
  // Options only: the test Redis is no cluster (its connection is closed again at once).
  const nodes = '127.0.0.1:6379';
  const cluster = (role: 'producer' | 'worker', o = {}) => {
    const c = createRedis('redis://127.0.0.1:6379', role, nodes, o) as unknown as Cluster;
    clients.push(c as unknown as Redis);
    return c;
  };
  const timeouts = (o: RedisOptions | undefined) => ({ command: o?.commandTimeout, socket: o?.socketTimeout, resend: o?.autoResendUnfulfilledCommands });
  const producerTimeouts = (ms: number) => ({ command: ms, socket: ms, resend: false });
  const none = { command: undefined, socket: undefined, resend: undefined };
  expect(timeouts(cluster('producer', { commandTimeoutMs: 1234 }).options.redisOptions)).toEqual(producerTimeouts(1234));
  expect(timeouts(cluster('producer').options.redisOptions)).toEqual(producerTimeouts(DEFAULT_REDIS_COMMAND_TIMEOUT_MS));
  expect(timeouts(cluster('worker', { commandTimeoutMs: 1234 }).options.redisOptions)).toEqual(none);
  const single = (role: 'producer' | 'worker') => {
    const c = createRedis('redis://127.0.0.1:6379', role, undefined, { commandTimeoutMs: 1234 });
    clients.push(c);
    return c;
  };
  expect(timeouts(single('producer').options)).toEqual(producerTimeouts(1234));
  // A worker keeps ioredis's defaults: no timeouts, and commands resent after a reconnect.
  expect(timeouts(single('worker').options)).toEqual({ ...none, resend: true });
  // The services pass REDIS_COMMAND_TIMEOUT_MS; its default is the one used without it.
  expect(loadConfig(baseEnv, {}).REDIS_COMMAND_TIMEOUT_MS).toBe(DEFAULT_REDIS_COMMAND_TIMEOUT_MS);
});
