/** Explicit non-claims, by category: what Hookline does not do or does not promise. */
export const NON_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  delivery: [
    'Exactly-once delivery is not offered; delivery is at-least-once and consumers must handle duplicates idempotently.',
    'Private delivery through an edge agent is pull-based (outbound long-polls) and at-least-once; per-destination mTLS (a client certificate to the target) does not apply on that path, since the agent never holds destination secrets.',
  ],
  availability: [
    'Multi-region failover is not offered.',
    'No availability or latency SLA is claimed; figures in the repository are local measurements on one machine.',
  ],
  configuration: [
    'Git-based configuration is not implemented (planned for v1.1).',
    'Recovery from inconsistent state is not automatic; re-apply the desired state.',
  ],
  security: [
    'Automatic certificate rotation is not offered; certificates are rotated manually.',
    'Mutual TLS for MCP clients is not implemented; MCP authenticates with mcp_ API keys.',
    'No external penetration test or security audit has been performed.',
  ],
  evidence: [
    'Evidence is produced by a local mock harness (PostgreSQL, Redis and loopback receivers); nothing here is evidence of production operation.',
    'Receipts are HMAC-keyed, not publicly signed, and Merkle roots are not anchored in an external transparency log.',
    'Merkle roots are not chained: each root covers one tenant window on its own and names no earlier root, so a root removed or re-issued with its receipts shows only against a copy of that root kept earlier.',
    'The response hash in a receipt covers the stored, truncated response body.',
  ],
  compliance: [
    'No compliance certification (SOC 2, ISO 27001, PCI DSS, HIPAA) is held or claimed; the compliance map is an internal readiness view.',
  ],
  api: [
    'The public Customer API is a planned contract; /api/bff/v1 is internal and not a public contract.',
    'MCP is a draft public contract; its tools may change.',
    "Only MCP keys have a rate limit of their own: API keys and session tokens, and MCP key management done with them, draw on the tenant's per-plan limit alone, and several MCP keys together can still spend it.",
    'The rate limits (per tenant and per MCP key) live in Redis and fail open: while Redis is unreachable, requests are not limited.',
  ],
};

export function allNonClaims(): string[] {
  return Object.values(NON_CLAIMS).flat();
}
