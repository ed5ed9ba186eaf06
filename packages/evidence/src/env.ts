import type { EnvSchema } from '@hookline/config';

/**
 * Variables of the evidence sealer, to spread into the env schema of the service that runs
 * it (`{ ...baseEnv, ...evidenceEnv }`); SECRETS_KEY comes from baseEnv.
 */
export const evidenceEnv = {
  EVIDENCE_KEY: { type: 'string', default: '', description: 'Key that signs delivery receipts and Merkle roots; empty = derived from SECRETS_KEY' },
  EVIDENCE_SEAL_INTERVAL_MS: { type: 'integer', default: 2000, minimum: 100, description: 'How often receipts are issued and due windows sealed' },
  EVIDENCE_WINDOW_MS: { type: 'integer', default: 60000, minimum: 1000, description: 'Length of a Merkle window (per tenant)' },
  EVIDENCE_SEAL_GRACE_MS: { type: 'integer', default: 2000, minimum: 0, description: 'A window is sealed only this long after it ended' },
} as const satisfies EnvSchema;
