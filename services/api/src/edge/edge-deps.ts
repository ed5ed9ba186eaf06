import { createSecretCache, deliveryPolicy, type DeliveryPolicy } from '@hookline/delivery';
import type { Pool } from '@hookline/db';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { SecretBox } from '@hookline/signing';
import type { EdgeConfig } from './edge-config';

/** What the agent-facing endpoints need; `createEdgeDeps` builds it from the api's context. */
export interface EdgeDeps {
  pool: Pool;
  redis: Redis;
  /** Queue prefix: the replay cache keys live under it. */
  prefix: string;
  logger: Logger;
  config: EdgeConfig;
  policy: DeliveryPolicy;
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
    openSecret: createSecretCache(r.box),
    draining: r.draining,
  };
}
