import { baseEnv, type ConfigOf, type EnvSchema } from '@hookline/config';
import { breakerEnv, deliveryPolicyEnv, edgeStatusEnv } from '@hookline/delivery';
import { observabilityEnv, queueMetricsEnv } from '@hookline/observability';
import { POOL_PATTERNS } from '@hookline/queues';

const DAY_MS = 86_400_000;

/** Everything the deliverer reads from the environment (validated once in main.ts). */
export const delivererEnv = {
  ...baseEnv,
  ...deliveryPolicyEnv,
  ...breakerEnv,
  ...edgeStatusEnv,
  ...observabilityEnv,
  ...queueMetricsEnv,
  PORT: { type: 'integer', default: 8083, minimum: 0, maximum: 65535, description: 'health server port (/healthz, /readyz)' },
  HOST: { type: 'string', default: '0.0.0.0' },
  DELIVERER_CONCURRENCY: { type: 'integer', default: 64, minimum: 1, maximum: 1000, description: 'deliver jobs (batches) processed at once, per queue consumed' },
  DELIVERER_DB_IN_FLIGHT: { type: 'integer', default: 2, minimum: 1, maximum: 64, description: 'claim statements and outcome calls at once; jobs beyond wait and are merged into the next (group commit)' },
  DELIVER_QUEUES: {
    type: 'string',
    default: 'deliver',
    pattern: POOL_PATTERNS.deliverQueues,
    description: 'queues this process consumes: deliver (the default pool) and/or deliver.<pool> (a pool dedicated to the tenants DEDICATED_POOLS maps to it)',
  },
  DEDICATED_POOLS: {
    type: 'string',
    default: '',
    pattern: POOL_PATTERNS.dedicatedPools,
    description: 'tenant_id=pool,… as given to the router: the recovery sweep re-enqueues these tenants\' deliveries on deliver.<pool>',
  },
  DELIVERER_MAX_CLAIMED: { type: 'integer', default: 1024, minimum: 1, maximum: 1_000_000, description: 'deliveries held claimed at once per process (bodies in memory, leases running); a job\'s ids are claimed in chunks of 100 as room frees' },
  DELIVERER_MAX_IN_FLIGHT: { type: 'integer', default: 256, minimum: 1, maximum: 100000, description: 'outbound requests in flight per process' },
  DELIVERER_DESTINATION_MAX_SHARE: {
    type: 'number',
    default: 1,
    minimum: 0.01,
    maximum: 1,
    description:
      'fraction of DELIVERER_MAX_IN_FLIGHT and of DELIVERER_MAX_CLAIMED that is one destination\'s own; beyond it a destination borrows only while one share stays free (in flight: all but a share; claims: all but a share and a chunk; claims beyond are given back unsent, without an attempt). Never fewer than 4, or the whole limit if smaller. 1 (the default): off. A shared multi-tenant pool may set 0.25 (see the README, Shares: it costs a single busy destination throughput)',
  },
  DELIVERER_TENANT_MAX_SHARE: {
    type: 'number',
    default: 1,
    minimum: 0.01,
    maximum: 1,
    description:
      'fraction of DELIVERER_MAX_IN_FLIGHT and of DELIVERER_MAX_CLAIMED one tenant\'s destinations may hold together (never less than one destination\'s share). 1 (the default): only each destination\'s share; a multi-tenant pool may set e.g. 0.5, a pool serving one tenant leaves it at 1',
  },
  DELIVERER_RECORD_LINGER_MS: { type: 'integer', default: 20, minimum: 0, maximum: 10_000, description: 'outcomes of one batch completed within this of each other are recorded in one write (each is recorded this soon after its request completes, not after the slowest)' },
  DELIVERY_LEASE_MS: { type: 'integer', default: 120_000, minimum: 1000, description: 'how long a claim holds a delivery before recovery may take it back' },
  CLAIM_SLACK_MS: { type: 'integer', default: 250, minimum: 0, description: 'a delivery due this soon may be claimed (delayed jobs fire a little early or late)' },
  RECOVERY_INTERVAL_MS: { type: 'integer', default: 5000, minimum: 10 },
  RECOVERY_AFTER_MS: { type: 'integer', default: 30_000, minimum: 0, description: 'a due delivery waiting this long without a job is re-enqueued' },
  RECOVERY_BATCH_SIZE: { type: 'integer', default: 2000, minimum: 1, description: 'deliveries re-enqueued per sweep at most' },
  // BREAKER_FAILURE_THRESHOLD, BREAKER_COOLDOWN_MS, DESTINATION_DISABLE_AFTER_MS: breakerEnv (the api reads them too).
  SSRF_ALLOWLIST: { type: 'string', default: '', description: 'comma CIDRs exempt from SSRF protection (local dev and tests: 127.0.0.0/8,::1/128)' },
  DLQ_RETENTION_MS: { type: 'integer', default: 7 * DAY_MS, minimum: 1, description: 'exhausted deliveries (the DLQ) are kept this long' },
  PURGE_INTERVAL_MS: { type: 'integer', default: 3_600_000, minimum: 10, description: 'how often the DLQ purge runs, and the purge of expired idempotency records and old ingest rejections' },
  INGEST_REJECTION_RETENTION_MS: {
    type: 'integer',
    default: 30 * DAY_MS,
    minimum: 1,
    maximum: 100 * 365 * DAY_MS,
    description: 'ingest rejections (refused inbound requests: bad signature, allowlist, header rules) are kept this long, then deleted by the purge',
  },
  HELD_RETENTION_MS: {
    type: 'integer',
    default: 7 * DAY_MS,
    minimum: 1,
    description: 'held deliveries (open deliveries of a DISABLED destination) held for longer than this (counted from held_since, when they were held) are moved to the DLQ by the janitor (last_error held_expired)',
  },
  JANITOR_INTERVAL_MS: {
    type: 'integer',
    default: 60_000,
    minimum: 10,
    description: 'how often the janitor runs: it closes open deliveries of DELETED destinations and flows (left by a delete beyond its inline limit, or created after it by a stale router) and expires held deliveries past HELD_RETENTION_MS',
  },
  EDGE_WAIT_LIMIT_MS: { type: 'integer', default: 900_000, minimum: 0, description: 'a due delivery of a cluster with no agent connected waits this long, then fails an attempt (edge_unavailable)' },
} as const satisfies EnvSchema;

export type DelivererConfig = ConfigOf<typeof delivererEnv>;

export function parseList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}
