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
   * rejects with "Command timed out", and a connection that has received nothing for this
   * long while a command waits is dropped and made again (ioredis `socketTimeout`, see
   * createRedis). Default DEFAULT_REDIS_COMMAND_TIMEOUT_MS.
   */
  commandTimeoutMs?: number;
}

/**
 * Workers block on Redis and must never give up a command (`maxRetriesPerRequest: null`,
 * no command timeout: BullMQ's blocking fetches and pub/sub subscribers wait by design);
 * producers fail fast so that a caller can answer or fall back (BullMQ's production
 * guide): at once while Redis is down (no offline queue, one retry, a 2 s connect
 * timeout), and after `commandTimeoutMs` when Redis is connected but does not answer (a
 * hung or overloaded Redis, a partition without RST), which nothing else bounds.
 *
 * A producer connection is also dropped when it stalls (ioredis `socketTimeout`, equal to
 * the command timeout): once a command has been written and no byte at all has come back
 * for that long (the timer starts at a write onto an idle connection and restarts on every
 * reply while commands wait), ioredis destroys the socket and reconnects (retryStrategy;
 * meanwhile commands fail at once, as with Redis down). Without it a partition without RST
 * keeps the socket, and the commands in its kernel buffer, until the kernel gives up
 * (tcp_retries2: many minutes), so commands that timed out could still reach Redis and run
 * whenever the partition heals. Not below the command timeout: a healthy but busy Redis
 * that answers within it must keep its connection (it answers in order, and a command not
 * answered within it has failed for its caller anyway); not above it: that would only keep
 * a connection whose oldest command has already failed, and make new commands wait the
 * full timeout each. `autoResendUnfulfilledCommands: false`: ioredis would otherwise write
 * the commands left unanswered on the dropped socket again on the new one, so that commands
 * their callers already saw fail would run late for sure; instead each still-pending one
 * fails with "Command timed out" when its own timeout ends.
 *
 * What remains: a command that timed out may still run if it reached Redis before the
 * stall or partition (its reply is what was lost, or Redis was merely slow): callers treat
 * it as failed, which every caller can (rate limits and the gate fail open; an enqueue is
 * left to a recovery sweep, whose re-enqueue is idempotent). What the socket timeout
 * removes is the other case, a command that had not reached Redis yet: whatever the dropped
 * socket had not delivered is never delivered. Nothing blocking may run on a producer
 * connection (the socket timeout would cut it too).
 *
 * With `clusterNodes` (REDIS_CLUSTER_NODES) the client is an `IORedis.Cluster` seeded from
 * those nodes; the credentials and TLS of `url` apply to every node, and so do the
 * command and socket timeouts (through `redisOptions`: each node's connection times its
 * commands and is dropped when it stalls). BullMQ needs every key of a queue in one slot: the `{…}` hash tag of QUEUE_PREFIX does
 * that. A Cluster answers every command Hookline sends (commands, scripts, pub/sub), so it
 * is returned as `Redis`.
 */
export function createRedis(url: string, role: 'worker' | 'producer', clusterNodes?: string, o: CreateRedisOptions = {}): Redis {
  const commandTimeout = o.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
  const opts: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: false }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, commandTimeout, socketTimeout: commandTimeout, autoResendUnfulfilledCommands: false };
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
