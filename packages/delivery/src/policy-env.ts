import type { ConfigOf, EnvSchema } from '@hookline/config';
import type { BreakerOptions } from './circuit-breaker';
import type { DeliveryDefaults } from './destination-settings';
import type { BackoffPolicy } from './retry-policy';

/**
 * The delivery policy every process that records attempts reads (the deliverer, and the
 * api for edge reports), so a retry or the DLQ follows the same rules on both paths.
 */
export const deliveryPolicyEnv = {
  DESTINATION_MAX_CONCURRENCY: { type: 'integer', default: 10, minimum: 1, maximum: 1000, description: 'default in-flight requests per destination (config.max_concurrency overrides)' },
  // At most what a destination's config.timeout_ms may be (MAX_DESTINATION_TIMEOUT_MS, 5 minutes).
  DELIVERY_TIMEOUT_MS: { type: 'integer', default: 15000, minimum: 1, maximum: 300_000, description: 'default whole-request timeout (config.timeout_ms overrides; at most 300000)' },
  DELIVERY_MAX_ATTEMPTS: { type: 'integer', default: 5, minimum: 1, maximum: 100 },
  RETRY_BASE_MS: { type: 'integer', default: 1000, minimum: 1, description: 'first backoff delay; doubles per attempt, with jitter' },
  RETRY_MAX_MS: { type: 'integer', default: 3_600_000, minimum: 1, description: 'cap of one backoff delay' },
  RETRY_SCHEDULE_MS: { type: 'string', default: '', description: 'comma list of delays that replaces the exponential backoff, e.g. "50,100,150,200"' },
  RETRY_AFTER_MAX_MS: { type: 'integer', default: 3_600_000, minimum: 0, description: 'upper bound on an honoured Retry-After' },
  RESPONSE_BODY_LIMIT: { type: 'integer', default: 4096, minimum: 0, maximum: 1_048_576, description: 'bytes of a response body kept on the attempt' },
} as const satisfies EnvSchema;

/** Edge planes: read by the api (views, work) and the deliverer (wait-limit sweep). */
export const edgeStatusEnv = {
  EDGE_CONNECTED_WINDOW_MS: { type: 'integer', default: 60_000, minimum: 1000, description: 'a cluster counts as connected while an agent contacted the service within this window' },
} as const satisfies EnvSchema;

const DAY_MS = 86_400_000;

/**
 * Destination protection: read by the deliverer and by the api (edge work and reports),
 * which share each destination's circuit through Redis. Give both the same values.
 */
export const breakerEnv = {
  BREAKER_FAILURE_THRESHOLD: { type: 'integer', default: 10, minimum: 1, description: 'consecutive failures that open a destination circuit' },
  BREAKER_COOLDOWN_MS: { type: 'integer', default: 30_000, minimum: 1, description: 'how long an open circuit waits before one probe' },
  DESTINATION_DISABLE_AFTER_MS: { type: 'integer', default: 3 * DAY_MS, minimum: 1, description: 'a destination failing without a success this long is DISABLED' },
} as const satisfies EnvSchema;

export type BreakerConfig = ConfigOf<typeof breakerEnv>;

/** The circuit breaker's options from breakerEnv, under the queue prefix. */
export function breakerOptions(config: BreakerConfig, prefix: string): BreakerOptions {
  return {
    prefix,
    threshold: config.BREAKER_FAILURE_THRESHOLD,
    cooldownMs: config.BREAKER_COOLDOWN_MS,
    // A health record outlives the disable window by a week.
    ttlMs: config.DESTINATION_DISABLE_AFTER_MS + 7 * DAY_MS,
  };
}

export type DeliveryPolicyConfig = ConfigOf<typeof deliveryPolicyEnv>;

/** `"50, 100,150"` -> [50, 100, 150]; empty -> null (exponential backoff). */
export function parseSchedule(value: string): number[] | null {
  const parts = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (parts.length === 0) return null;
  const out = parts.map(Number);
  if (out.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`RETRY_SCHEDULE_MS must be a comma list of non-negative integers (got "${value}")`);
  return out;
}

export interface DeliveryPolicy {
  defaults: DeliveryDefaults;
  backoff: BackoffPolicy;
}

export function deliveryPolicy(config: DeliveryPolicyConfig): DeliveryPolicy {
  return {
    defaults: {
      timeoutMs: config.DELIVERY_TIMEOUT_MS,
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      maxConcurrency: config.DESTINATION_MAX_CONCURRENCY,
      retryScheduleMs: parseSchedule(config.RETRY_SCHEDULE_MS),
    },
    backoff: { retryBaseMs: config.RETRY_BASE_MS, retryMaxMs: config.RETRY_MAX_MS, retryAfterMaxMs: config.RETRY_AFTER_MAX_MS },
  };
}
