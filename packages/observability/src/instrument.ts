import type { Pool } from '@hookline/db';
import type { Redis } from '@hookline/queues';
import type { Metrics } from './metrics';

type Fn = (...args: unknown[]) => unknown;

/** Wraps `target[method]` so that a failure (callback or promise style) counts once in hookline_db_errors_total. */
function countFailures(target: object, method: 'query' | 'connect', metrics: Metrics, operation: string): void {
  const t = target as Record<string, unknown>;
  const original = (t[method] as Fn).bind(target);
  t[method] = (...args: unknown[]): unknown => {
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      args[args.length - 1] = (err: unknown, ...rest: unknown[]) => {
        if (err) metrics.dbErrors.inc({ operation });
        return (last as Fn)(err, ...rest);
      };
      return original(...args);
    }
    const out = original(...args);
    return out instanceof Promise
      ? out.catch((err: unknown) => {
          metrics.dbErrors.inc({ operation });
          throw err;
        })
      : out;
  };
}

/**
 * Counts PostgreSQL errors of a `pg` pool: failed statements (`query`: every statement,
 * `pool.query` included, runs on a pooled client, so the clients are wrapped), failed
 * connects (`connect`) and connections lost while idle (`connection`).
 */
export function instrumentPool(pool: Pool, metrics: Metrics): Pool {
  countFailures(pool, 'connect', metrics, 'connect');
  pool.on('connect', (client) => countFailures(client, 'query', metrics, 'query'));
  pool.on('error', () => metrics.dbErrors.inc({ operation: 'connection' }));
  return pool;
}

/** Counts a Redis client's connection errors (each failed connect or lost connection). */
export function instrumentRedis(redis: Redis, metrics: Metrics): Redis {
  redis.on('error', () => metrics.redisErrors.inc({ operation: 'connection' }));
  return redis;
}
