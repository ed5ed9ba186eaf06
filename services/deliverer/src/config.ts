import { baseEnv, type ConfigOf, type EnvSchema } from '@hookline/config';

const DAY_MS = 86_400_000;

/** Everything the deliverer reads from the environment (validated once in main.ts). */
export const delivererEnv = {
  ...baseEnv,
  PORT: { type: 'integer', default: 8083, minimum: 0, maximum: 65535, description: 'health server port (/healthz, /readyz)' },
  HOST: { type: 'string', default: '0.0.0.0' },
  DELIVERER_CONCURRENCY: { type: 'integer', default: 16, minimum: 1, maximum: 1000, description: 'deliver jobs (batches) processed at once' },
  DELIVERER_MAX_IN_FLIGHT: { type: 'integer', default: 256, minimum: 1, maximum: 100000, description: 'outbound requests in flight per process' },
  DESTINATION_MAX_CONCURRENCY: { type: 'integer', default: 10, minimum: 1, maximum: 1000, description: 'default in-flight requests per destination (config.max_concurrency overrides)' },
  DELIVERY_TIMEOUT_MS: { type: 'integer', default: 15000, minimum: 1, description: 'default whole-request timeout (config.timeout_ms overrides)' },
  DELIVERY_MAX_ATTEMPTS: { type: 'integer', default: 5, minimum: 1, maximum: 100 },
  RETRY_BASE_MS: { type: 'integer', default: 1000, minimum: 1, description: 'first backoff delay; doubles per attempt, with jitter' },
  RETRY_MAX_MS: { type: 'integer', default: 3_600_000, minimum: 1, description: 'cap of one backoff delay' },
  RETRY_SCHEDULE_MS: { type: 'string', default: '', description: 'comma list of delays that replaces the exponential backoff, e.g. "50,100,150,200"' },
  RETRY_AFTER_MAX_MS: { type: 'integer', default: 3_600_000, minimum: 0, description: 'upper bound on an honoured Retry-After' },
  RESPONSE_BODY_LIMIT: { type: 'integer', default: 4096, minimum: 0, maximum: 1_048_576, description: 'bytes of a response body kept on the attempt' },
  DELIVERY_LEASE_MS: { type: 'integer', default: 120_000, minimum: 1000, description: 'how long a claim holds a delivery before recovery may take it back' },
  CLAIM_SLACK_MS: { type: 'integer', default: 250, minimum: 0, description: 'a delivery due this soon may be claimed (delayed jobs fire a little early or late)' },
  RECOVERY_INTERVAL_MS: { type: 'integer', default: 5000, minimum: 10 },
  RECOVERY_AFTER_MS: { type: 'integer', default: 30_000, minimum: 0, description: 'a due delivery waiting this long without a job is re-enqueued' },
  RECOVERY_BATCH_SIZE: { type: 'integer', default: 2000, minimum: 1, description: 'deliveries re-enqueued per sweep at most' },
  BREAKER_FAILURE_THRESHOLD: { type: 'integer', default: 10, minimum: 1, description: 'consecutive failures that open a destination circuit' },
  BREAKER_COOLDOWN_MS: { type: 'integer', default: 30_000, minimum: 1, description: 'how long an open circuit waits before one probe' },
  DESTINATION_DISABLE_AFTER_MS: { type: 'integer', default: 3 * DAY_MS, minimum: 1, description: 'a destination failing without a success this long is DISABLED' },
  SSRF_ALLOWLIST: { type: 'string', default: '', description: 'comma CIDRs exempt from SSRF protection (local dev and tests: 127.0.0.0/8,::1/128)' },
  DLQ_RETENTION_MS: { type: 'integer', default: 7 * DAY_MS, minimum: 1, description: 'exhausted deliveries (the DLQ) are kept this long' },
  PURGE_INTERVAL_MS: { type: 'integer', default: 3_600_000, minimum: 10, description: 'how often the DLQ purge runs' },
} as const satisfies EnvSchema;

export type DelivererConfig = ConfigOf<typeof delivererEnv>;

/** `"50, 100,150"` -> [50, 100, 150]; empty -> null (exponential backoff). */
export function parseSchedule(value: string): number[] | null {
  const parts = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (parts.length === 0) return null;
  const out = parts.map(Number);
  if (out.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`RETRY_SCHEDULE_MS must be a comma list of non-negative integers (got "${value}")`);
  return out;
}

export function parseList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}
