import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ConfigOf, EnvSchema } from '@hookline/config';

/** Everything hookline-edge reads from the environment (validated once in main.ts). */
export const edgeAgentEnv = {
  HOOKLINE_URL: { type: 'string', minLength: 1, description: 'base URL of the Hookline service (https in production), e.g. https://hookline.example.com' },
  CLUSTER_ID: { type: 'string', minLength: 1, description: 'the cluster (plane) this agent serves: cls_…' },
  CLUSTER_KEY: { type: 'string', minLength: 16, description: 'the HMAC key issued when the cluster was enrolled (shown once)' },
  EDGE_CLIENT_CERT: { type: 'string', default: '', description: 'client certificate for mTLS to the service: a PEM file path or the PEM itself' },
  EDGE_CLIENT_KEY: { type: 'string', default: '', description: 'its private key: a PEM file path or the PEM itself' },
  EDGE_CA: { type: 'string', default: '', description: 'CA bundle to trust for the service certificate instead of the system CAs' },
  EDGE_MAX_IN_FLIGHT: { type: 'integer', default: 32, minimum: 1, maximum: 10_000, description: 'deliveries held at once (sent or awaiting their report)' },
  EDGE_POLL_WAIT_SECONDS: { type: 'integer', default: 25, minimum: 0, maximum: 120, description: 'long-poll wait of a work request' },
  EDGE_BACKOFF_BASE_MS: { type: 'integer', default: 500, minimum: 1, description: 'first delay after the service could not be reached; doubles, with jitter' },
  EDGE_BACKOFF_MAX_MS: { type: 'integer', default: 30_000, minimum: 1, description: 'cap of that delay' },
  EDGE_AGENT_ID: { type: 'string', default: '', description: 'names this agent in leases and logs (default <hostname>-<pid>)' },
  PORT: { type: 'integer', default: 8090, minimum: 0, maximum: 65535, description: 'health server (/healthz, /readyz)' },
  HOST: { type: 'string', default: '0.0.0.0' },
  LOG_LEVEL: { type: 'string', default: 'info', enum: ['error', 'warn', 'info', 'debug'] },
  SHUTDOWN_TIMEOUT_MS: { type: 'integer', default: 30_000, minimum: 0, description: 'on SIGTERM, how long in-flight deliveries and reports may take' },
} as const satisfies EnvSchema;

export type EdgeAgentConfig = ConfigOf<typeof edgeAgentEnv>;

/** A PEM given inline, or read from the file it names; undefined when empty. */
export function pemOf(value: string): string | undefined {
  if (!value) return undefined;
  return value.includes('-----BEGIN') ? value : readFileSync(value, 'utf8');
}

export function agentIdOf(config: EdgeAgentConfig): string {
  return (config.EDGE_AGENT_ID || `${hostname()}-${process.pid}`).replace(/[^A-Za-z0-9._:@-]/g, '_').slice(0, 100);
}
