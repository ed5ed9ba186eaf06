import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createSecureContext } from 'node:tls';
import { ConfigError, loadConfig, type ConfigOf, type EnvSchema } from '@hookline/config';
import { isCertificateBundle } from '@hookline/delivery/src/certificate-pem';
import { parseTargetPolicy, type TargetPolicy } from './target-policy';

/** Everything hookline-edge reads from the environment (validated once in main.ts). */
export const edgeAgentEnv = {
  HOOKLINE_URL: { type: 'string', minLength: 1, description: 'base URL of the Hookline service (https in production), e.g. https://hookline.example.com' },
  CLUSTER_ID: { type: 'string', pattern: '^cls_[A-Za-z0-9_-]{1,96}$', description: 'the cluster (plane) this agent serves: cls_…' },
  // Its length is checked in loadEdgeConfig: the loader quotes a bad value in its message, and this one is a secret.
  CLUSTER_KEY: { type: 'string', minLength: 1, description: 'the HMAC key issued when the cluster was enrolled (shown once)' },
  EDGE_CLIENT_CERT: { type: 'string', default: '', description: 'client certificate for mTLS to the service: a PEM file path or the PEM itself' },
  EDGE_CLIENT_KEY: { type: 'string', default: '', description: 'its private key: a PEM file path or the PEM itself' },
  EDGE_CA: { type: 'string', default: '', description: 'CA bundle to trust for the service certificate instead of the system CAs' },
  EDGE_MAX_IN_FLIGHT: { type: 'integer', default: 32, minimum: 1, maximum: 10_000, description: 'deliveries held at once (sent or awaiting their report)' },
  EDGE_POLL_WAIT_SECONDS: { type: 'integer', default: 25, minimum: 0, maximum: 120, description: 'long-poll wait of a work request' },
  EDGE_BACKOFF_BASE_MS: { type: 'integer', default: 500, minimum: 1, description: 'first delay after the service could not be reached; doubles, with jitter' },
  EDGE_BACKOFF_MAX_MS: { type: 'integer', default: 30_000, minimum: 1, description: 'cap of that delay' },
  EDGE_ALLOWED_TARGETS: { type: 'string', default: '', description: 'comma-separated CIDRs and host names the agent may send to (empty: any address but link-local)' },
  EDGE_DENY_LINK_LOCAL: { type: 'boolean', default: true, description: 'refuse link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10, …) unless listed in EDGE_ALLOWED_TARGETS' },
  EDGE_SEND_RESPONSE_BODY: { type: 'boolean', default: true, description: 'report the beginning of the targets\' answers to the service (false: never)' },
  EDGE_AGENT_ID: { type: 'string', default: '', description: 'names this agent in leases and logs (default <hostname>-<pid>)' },
  PORT: { type: 'integer', default: 8090, minimum: 0, maximum: 65535, description: 'health server (/healthz, /readyz)' },
  HOST: { type: 'string', default: '0.0.0.0' },
  LOG_LEVEL: { type: 'string', default: 'info', enum: ['error', 'warn', 'info', 'debug'] },
  SHUTDOWN_TIMEOUT_MS: { type: 'integer', default: 30_000, minimum: 0, description: 'on SIGTERM, how long in-flight deliveries and reports may take' },
} as const satisfies EnvSchema;

export type EdgeAgentConfig = ConfigOf<typeof edgeAgentEnv>;

export interface EdgeTls {
  cert?: string;
  key?: string;
  ca?: string;
}

/** A PEM given inline, or read from the file it names; undefined when empty. */
export function pemOf(value: string): string | undefined {
  if (!value) return undefined;
  return value.includes('-----BEGIN') ? value : readFileSync(value, 'utf8');
}

const TLS_VARS = [
  ['EDGE_CLIENT_CERT', 'cert'],
  ['EDGE_CLIENT_KEY', 'key'],
  ['EDGE_CA', 'ca'],
] as const;

/**
 * The agent's settings, checked once at boot: a ConfigError names every bad variable and
 * what is wrong with it, and never quotes a secret (the cluster key, a private key).
 */
export function loadEdgeConfig(env: NodeJS.ProcessEnv = process.env): { config: EdgeAgentConfig; tls: EdgeTls; targets: TargetPolicy } {
  const config = loadConfig(edgeAgentEnv, env);
  const problems: string[] = [];
  if (config.CLUSTER_KEY.length < 16) problems.push('CLUSTER_KEY is too short to be a cluster key (the hmac_key shown once when the cluster was enrolled, hkc_…)');
  const url = URL.canParse(config.HOOKLINE_URL) ? new URL(config.HOOKLINE_URL) : null;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) problems.push('HOOKLINE_URL must be an http(s) URL, e.g. https://hookline.example.com');
  else if (url.search || url.hash || url.username || url.password) problems.push('HOOKLINE_URL must be a plain base URL: no query, fragment or credentials');
  if (config.EDGE_BACKOFF_MAX_MS < config.EDGE_BACKOFF_BASE_MS) problems.push(`EDGE_BACKOFF_MAX_MS (${config.EDGE_BACKOFF_MAX_MS}) must not be below EDGE_BACKOFF_BASE_MS (${config.EDGE_BACKOFF_BASE_MS})`);
  const { policy: targets, invalid } = parseTargetPolicy(config.EDGE_ALLOWED_TARGETS, config.EDGE_DENY_LINK_LOCAL);
  if (invalid.length > 0) problems.push(`EDGE_ALLOWED_TARGETS entries are neither a CIDR nor a host name: ${invalid.map((e) => JSON.stringify(e)).join(', ')}`);
  else if (targets.restricted && targets.cidrs.length === 0 && targets.hosts.size === 0) problems.push('EDGE_ALLOWED_TARGETS lists nothing (leave it unset to allow any target)');
  const tls: EdgeTls = {};
  let readable = true;
  for (const [name, field] of TLS_VARS) {
    try {
      tls[field] = pemOf(config[name]);
    } catch (err) {
      // The code only: a PEM pasted without its BEGIN line is taken for a path, and the message would quote it.
      problems.push(`${name} is neither a PEM nor a readable file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
      readable = false;
    }
  }
  if (Boolean(tls.cert) !== Boolean(tls.key)) problems.push('EDGE_CLIENT_CERT and EDGE_CLIENT_KEY go together');
  else if (readable && tls.cert) {
    try {
      createSecureContext(tls);
    } catch (err) {
      problems.push(`EDGE_CLIENT_CERT and EDGE_CLIENT_KEY do not make a usable TLS identity (${(err as Error).message})`);
    }
  }
  // Node takes a CA bundle it cannot read without a word; every request would then fail.
  if (tls.ca && !isCertificateBundle(tls.ca)) problems.push('EDGE_CA holds no readable CA certificate (PEM)');
  if (problems.length > 0) throw new ConfigError(problems);
  return { config, tls, targets };
}

export function agentIdOf(config: EdgeAgentConfig): string {
  return (config.EDGE_AGENT_ID || `${hostname()}-${process.pid}`).replace(/[^A-Za-z0-9._:@-]/g, '_').slice(0, 100);
}
