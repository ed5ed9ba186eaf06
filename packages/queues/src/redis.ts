import IORedis, { Cluster, type Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/** `host:port,host:port` (REDIS_CLUSTER_NODES) → seed nodes; empty → none (single Redis). */
export function parseClusterNodes(value: string | undefined): { host: string; port: number }[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((node) => {
      const m = /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(node);
      const port = Number(m?.[2]);
      if (!m || port < 1 || port > 65535) throw new Error(`REDIS_CLUSTER_NODES entry "${node}" is not host:port`);
      return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
    });
}

/** How long a producer command waits for its reply by default (REDIS_COMMAND_TIMEOUT_MS's default). */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 5000;

export interface CreateRedisOptions {
  /**
   * Producers only (REDIS_COMMAND_TIMEOUT_MS): a command with no reply after this many ms
   * rejects with "Command timed out". Default DEFAULT_REDIS_COMMAND_TIMEOUT_MS.
   */
  commandTimeoutMs?: number;
}

/**
 * Workers block on Redis and must never give up a command (`maxRetriesPerRequest: null`,
 * no command timeout: BullMQ's blocking fetches and pub/sub subscribers wait by design);
 * producers fail fast so that a caller can answer or fall back (BullMQ's production
 * guide): at once while Redis is down (no offline queue, one retry, a 2 s connect
 * timeout), and after `commandTimeoutMs` when Redis is connected but does not answer (a
 * hung or overloaded Redis, a partition without RST), which nothing else bounds. A command
 * that timed out may still run when Redis gets to it: callers treat it as failed, which
 * every caller can (rate limits and the gate fail open; an enqueue is left to a recovery
 * sweep, whose re-enqueue is idempotent). Nothing blocking may run on a producer connection.
 *
 * With `clusterNodes` (REDIS_CLUSTER_NODES) the client is an `IORedis.Cluster` seeded from
 * those nodes; the credentials and TLS of `url` apply to every node, and so does the
 * command timeout (through `redisOptions`: each node's connection times its commands).
 * BullMQ needs every key of a queue in one slot: the `{…}` hash tag of QUEUE_PREFIX does
 * that. A Cluster answers every command Hookline sends (commands, scripts, pub/sub), so it
 * is returned as `Redis`.
 */
export function createRedis(url: string, role: 'worker' | 'producer', clusterNodes?: string, o: CreateRedisOptions = {}): Redis {
  const opts: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: false }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, commandTimeout: o.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS };
  const retryStrategy = (n: number): number => Math.min(n * 200, 2000);
  const nodes = parseClusterNodes(clusterNodes);
  let redis: Redis;
  if (nodes.length > 0) {
    const u = new URL(url);
    const cluster = new Cluster(nodes, {
      clusterRetryStrategy: retryStrategy,
      enableOfflineQueue: role === 'worker',
      enableReadyCheck: role !== 'worker',
      redisOptions: {
        ...opts,
        username: u.username ? decodeURIComponent(u.username) : undefined,
        password: u.password ? decodeURIComponent(u.password) : undefined,
        tls: u.protocol === 'rediss:' ? {} : undefined,
      },
    });
    redis = cluster as unknown as Redis;
  } else {
    redis = new IORedis(url, { ...opts, retryStrategy });
  }
  redis.on('error', () => undefined); // reported through readiness, metrics and job failures
  return redis;
}

/**
 * On Redis Cluster every key of a queue must hash to one slot, which only a `{…}` hash tag
 * in the prefix guarantees; without one every BullMQ script fails with CROSSSLOT. Checked
 * when a producer or worker is made, so that a bad pair of variables stops the boot.
 */
export function assertClusterPrefix(redis: Redis, prefix: string): void {
  if (isClusterClient(redis) && !/\{[^{}]+\}/.test(prefix)) {
    throw new Error(`QUEUE_PREFIX "${prefix}" has no {hash tag}, which Redis Cluster (REDIS_CLUSTER_NODES) needs: use e.g. "{hookline}"`);
  }
}

/** True for a client createRedis made from REDIS_CLUSTER_NODES. */
export function isClusterClient(redis: Redis): boolean {
  return (redis as unknown) instanceof Cluster;
}

/**
 * Resolves true once the client is connected (false after `timeoutMs`). A producer
 * connection refuses commands until then (no offline queue), so a process waits for it
 * at boot rather than answering its first requests without Redis.
 */
export function redisReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ok);
    };
    const onReady = (): void => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.on('ready', onReady);
  });
}
