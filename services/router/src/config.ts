import { baseEnv, MAX_TIMER_MS, type ConfigOf, type EnvSchema } from '@hookline/config';
import { observabilityEnv, queueMetricsEnv } from '@hookline/observability';
import { POOL_PATTERNS } from '@hookline/queues';

export const routerEnv = {
  ...baseEnv,
  ...observabilityEnv,
  ...queueMetricsEnv,
  PORT: { type: 'integer', default: 8082, minimum: 0, maximum: 65535, description: 'port of the /healthz and /readyz server' },
  HOST: { type: 'string', default: '0.0.0.0', description: 'interface the health server listens on' },
  ROUTER_CONCURRENCY: { type: 'integer', default: 8, minimum: 1, maximum: 256, description: 'route jobs (batches of events) processed at once' },
  FLOW_CACHE_TTL_MS: { type: 'integer', default: 5000, minimum: 0, maximum: MAX_TIMER_MS, description: 'how long the active flows of an ingester are cached; config-change messages drop them sooner' },
  RECOVERY_INTERVAL_MS: { type: 'integer', default: 5000, minimum: 10, maximum: MAX_TIMER_MS, description: 'how often the recovery sweep looks for events a lost route job left behind' },
  RECOVERY_AFTER_MS: { type: 'integer', default: 30000, minimum: 0, maximum: MAX_TIMER_MS, description: 'an event still validated this long after it was validated (received, for events written before validated_at existed) is routed again' },
  RECOVERY_BATCH: { type: 'integer', default: 1000, minimum: 1, maximum: 100000, description: 'events re-enqueued per sweep at most' },
  DEDICATED_POOLS: {
    type: 'string',
    default: '',
    pattern: POOL_PATTERNS.dedicatedPools,
    description: 'tenant_id=pool,…: these tenants\' deliveries go to queue deliver.<pool> (a dedicated deliverer pool) instead of deliver',
  },
} as const satisfies EnvSchema;

export type RouterConfig = ConfigOf<typeof routerEnv>;
