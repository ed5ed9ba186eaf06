import { PROVIDERS } from '@hookline/signing';

export type CapabilityStatus = 'implemented' | 'partial' | 'planned' | 'not_offered';

export interface Capability {
  id: string;
  name: string;
  status: CapabilityStatus;
  note?: string;
}

/**
 * What this build really does (SPEC.md lists the intended set). Keep it honest: when a
 * capability lands or changes, change its line here; the capabilities test reads it back.
 */
export const CAPABILITIES: readonly Capability[] = [
  { id: 'public_delivery', name: 'Public webhook delivery', status: 'implemented' },
  { id: 'fan_out', name: 'Fan-out to several destinations', status: 'implemented' },
  { id: 'retries', name: 'Retries with exponential backoff (5 attempts by default)', status: 'implemented' },
  { id: 'dlq', name: 'Dead-letter queue', status: 'implemented' },
  { id: 'replay', name: 'Replay from the DLQ / retention store', status: 'implemented', note: 'gated on the retained payload' },
  { id: 'retry', name: 'Manual retry of an event', status: 'implemented' },
  { id: 'filtering', name: 'JSONPath and operator filter rules', status: 'implemented' },
  { id: 'provider_verification', name: 'Provider signature verification', status: 'implemented', note: `providers: ${PROVIDERS.join(', ')}` },
  { id: 'ip_allowlisting', name: 'IP allowlisting', status: 'implemented', note: 'Pro plan and above' },
  { id: 'mtls_delivery', name: 'Outbound mutually authenticated TLS', status: 'implemented' },
  {
    id: 'evidence',
    name: 'Delivery evidence: a keyed receipt per attempt, sealed into per-tenant Merkle roots with inclusion proofs',
    status: 'implemented',
    note: 'receipts and roots carry HMACs under the service key (not public signatures); roots are not anchored in an external log; verify with pnpm evidence:verify',
  },
  { id: 'api_keys', name: 'Scoped API keys, session JWT login', status: 'implemented' },
  { id: 'audit_log', name: 'Audit log of writes', status: 'implemented' },
  { id: 'idempotency', name: 'Idempotency-Key on API writes (24 h)', status: 'implemented' },
  { id: 'rate_limits', name: 'Per-tenant API rate limits by plan', status: 'implemented' },
  { id: 'clusters', name: 'Cluster enrollment and HMAC-signed cluster requests', status: 'implemented', note: 'enrollment (key shown once), heartbeats, and the signed requests of edge agents (work leases and reports)' },
  {
    id: 'private_delivery',
    name: 'Private delivery through an edge plane',
    status: 'implemented',
    note: 'the hookline-edge agent (packages/edge) pulls a cluster\'s deliveries over outbound long-polls, sends them inside the private network and reports each attempt; the circuit breaker and per-destination rate limits apply on this path too (shared with the deliverer in Redis); per-destination mTLS applies to direct delivery only (the agent never holds destination secrets)',
  },
  { id: 'dedicated_ips', name: 'Dedicated receive IPs', status: 'planned', note: 'the Business plan gate exists; no dedicated addresses are provisioned' },
  {
    id: 'mcp',
    name: 'MCP for AI agents (Streamable HTTP at /v1/mcp, REST mirror under /v1/mcp/…)',
    status: 'implemented',
    note: 'X-MCP-API-Key (mcp_…) keys with MCP scopes; read tools on by default; write groups (retry, replay, configuration) disabled until enabled per key; MCP calls draw on the tenant\'s plan rate limit, shared with the control API, and on the key\'s own limit (rate_limit at creation, else MCP_KEY_RATE_LIMIT)',
  },
  { id: 'discovery_documents', name: 'Discovery documents under /ai/evidence/v1/ and /ai/security/v1/', status: 'implemented', note: 'proof statuses are worked out from the tests present where the api runs' },
  { id: 'git_config', name: 'Git-based configuration', status: 'planned', note: 'v1.1' },
  { id: 'cert_rotation', name: 'Automatic certificate rotation', status: 'not_offered' },
  { id: 'multi_region', name: 'Multi-region failover', status: 'not_offered' },
];
