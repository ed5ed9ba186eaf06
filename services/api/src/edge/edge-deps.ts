import { breakerOptions, createBreaker, createSecretCache, deliveryPolicy, type Breaker, type DeliveryPolicy } from '@hookline/delivery';
import type { Pool } from '@hookline/db';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { SecretBox } from '@hookline/signing';
import type { EdgeConfig } from './edge-config';

/** What the agent-facing endpoints need; `createEdgeDeps` builds it from the api's context. */
export interface EdgeDeps {
  pool: Pool;
  redis: Redis;
  /** Queue prefix: the replay cache keys and the destinations' circuits and rate windows live under it. */
  prefix: string;
  logger: Logger;
  config: EdgeConfig;
  policy: DeliveryPolicy;
  /**
   * Each destination's circuit breaker and rate limit, in Redis under the queue prefix: the
   * same state the deliverer uses (@hookline/delivery circuit-breaker.ts).
   */
  breaker: Breaker;
  /** A destination failing without a success this long is DISABLED (DESTINATION_DISABLE_AFTER_MS). */
  disableAfterMs: number;
  /** Opens a sealed secret (cluster key, destination secret); null when it does not open. */
  openSecret(sealed: string): string | null;
  /** Aborted once the api drains: work requests then lease nothing and answer at once. */
  draining: AbortSignal;
}

export function createEdgeDeps(r: { pool: Pool; redis: Redis; prefix: string; logger: Logger; box: SecretBox; draining: AbortSignal }, config: EdgeConfig): EdgeDeps {
  return {
    pool: r.pool,
    redis: r.redis,
    prefix: r.prefix,
    logger: r.logger.child({ component: 'edge' }),
    config,
    policy: deliveryPolicy(config),
    breaker: createBreaker(r.redis, breakerOptions(config, r.prefix)),
    disableAfterMs: config.DESTINATION_DISABLE_AFTER_MS,
    openSecret: createSecretCache(r.box),
    draining: r.draining,
  };
}
