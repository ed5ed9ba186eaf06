import IORedis, { type Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * Workers block on Redis and must never give up a command (`maxRetriesPerRequest: null`);
 * producers fail fast while Redis is down so that a caller can answer or fall back
 * (BullMQ's production guide).
 */
export function createRedis(url: string, role: 'worker' | 'producer'): Redis {
  const opts: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: false }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 };
  const redis = new IORedis(url, { ...opts, retryStrategy: (n) => Math.min(n * 200, 2000) });
  redis.on('error', () => undefined); // reported through readiness and job failures
  return redis;
}
