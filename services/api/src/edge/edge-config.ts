import { loadConfig, type ConfigOf, type EnvSchema } from '@hookline/config';
import { breakerEnv, deliveryPolicyEnv, edgeStatusEnv } from '@hookline/delivery';

/**
 * What the agent-facing endpoints read from the environment, beside the api's own config:
 * the same delivery policy as the deliverer (an edge attempt is recorded like a direct
 * one), the destination protection (the circuit and rate limit a destination shares with
 * the deliverer), the signature window, leases and long-poll bounds.
 */
export const edgeEnv = {
  ...deliveryPolicyEnv,
  ...breakerEnv,
  ...edgeStatusEnv,
  // Bounded so that an edge attempt's started_at stays well within the hour its id may be
  // off by (ID_WINDOW_SLACK_MS, services/api/src/http/id-window.ts): at most 10 + 15 + 10
  // minutes before (the longest lease, the tolerance, the lease) and 15 after.
  EDGE_SIGNATURE_TOLERANCE_SECONDS: { type: 'integer', default: 300, minimum: 1, maximum: 900, description: 'clock tolerance of signed agent requests (at most 15 minutes)' },
  EDGE_LEASE_MS: { type: 'integer', default: 60_000, minimum: 500, maximum: 600_000, description: 'lease of a delivery handed to an agent (stretched to timeout + half of it for slow destinations; at most 10 minutes)' },
  EDGE_MAX_WAIT_SECONDS: { type: 'integer', default: 30, minimum: 0, maximum: 120, description: 'longest long-poll of a work request' },
  EDGE_WORK_POLL_MS: { type: 'integer', default: 500, minimum: 10, description: 'how often a waiting work request looks for due deliveries' },
  EDGE_BATCH_MAX: { type: 'integer', default: 100, minimum: 1, maximum: 1000, description: 'deliveries per work response at most' },
} as const satisfies EnvSchema;

export type EdgeConfig = ConfigOf<typeof edgeEnv>;

export function loadEdgeConfig(env: NodeJS.ProcessEnv = process.env): EdgeConfig {
  return loadConfig(edgeEnv, env);
}
