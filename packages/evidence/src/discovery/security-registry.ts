/** Internal compliance readiness: a control of a framework and the capabilities that serve it. */
export interface ComplianceEntry {
  id: string;
  framework: string;
  control: string;
  capability_ids: readonly string[];
}

export const COMPLIANCE_ENTRIES: readonly ComplianceEntry[] = [
  { id: 'CR-001', framework: 'SOC 2 TSC 2017', control: 'CC6.1 Logical access: credentials, scopes, tenant boundaries', capability_ids: ['tenant_isolation', 'scoped_api_keys', 'mcp_key_auth'] },
  { id: 'CR-002', framework: 'SOC 2 TSC 2017', control: 'CC6.3 Least privilege for automated agents', capability_ids: ['mcp_key_auth', 'mcp_write_disabled_by_default'] },
  { id: 'CR-003', framework: 'SOC 2 TSC 2017', control: 'CC6.7 Protection of data in transit', capability_ids: ['mtls_delivery', 'signed_outbound'] },
  { id: 'CR-004', framework: 'SOC 2 TSC 2017', control: 'CC7.2 Monitoring and audit trail of changes', capability_ids: ['audited_writes'] },
  { id: 'CR-005', framework: 'SOC 2 TSC 2017', control: 'PI1.4 Complete and accurate processing outputs', capability_ids: ['delivery_evidence', 'receipt_integrity', 'no_loss_on_queue_loss'] },
  { id: 'CR-006', framework: 'ISO/IEC 27001:2022', control: 'A.8.24 Use of cryptography (secrets at rest, keyed receipts)', capability_ids: ['secrets_write_only', 'receipt_integrity'] },
  { id: 'CR-007', framework: 'ISO/IEC 27001:2022', control: 'A.8.20 Network security (allowlists, SSRF guard)', capability_ids: ['ip_allowlisting', 'ssrf_protection'] },
  { id: 'CR-008', framework: 'ISO/IEC 27001:2022', control: 'A.8.14 Redundancy of information processing facilities', capability_ids: ['multi_region_failover'] },
];

/** The threat model: STRIDE threats against the delivery path and the control surfaces. */
export interface Threat {
  id: string;
  category: 'spoofing' | 'tampering' | 'repudiation' | 'information_disclosure' | 'denial_of_service' | 'elevation_of_privilege';
  asset: string;
  threat: string;
  mitigations: readonly string[];
  residual_risk: string;
}

export const THREATS: readonly Threat[] = [
  { id: 'TM-001', category: 'spoofing', asset: 'ingest endpoints', threat: 'A forged webhook claims to come from a provider.', mitigations: ['provider_verification', 'ip_allowlisting'], residual_risk: 'Generic ingesters without a signing secret accept any sender.' },
  { id: 'TM-002', category: 'spoofing', asset: 'control API and MCP', threat: 'A caller uses a stolen, revoked or wrong-kind credential.', mitigations: ['scoped_api_keys', 'mcp_key_auth'], residual_risk: 'A stolen live key works until revoked; no client binding (mTLS) for MCP.' },
  { id: 'TM-003', category: 'tampering', asset: 'delivery evidence', threat: 'A receipt is edited after the fact to hide a failed or altered delivery.', mitigations: ['delivery_evidence', 'receipt_integrity'], residual_risk: 'Roots are neither chained nor anchored externally: with write access to the database a whole root can be removed with its receipts, and with the evidence key too, re-issued; only a copy of the root kept earlier shows it.' },
  { id: 'TM-004', category: 'tampering', asset: 'outbound deliveries', threat: 'A payload is altered in transit to the destination.', mitigations: ['signed_outbound', 'mtls_delivery'], residual_risk: 'Destinations that do not verify signatures are not protected.' },
  { id: 'TM-005', category: 'repudiation', asset: 'retry, replay and configuration writes', threat: 'An agent or user denies having triggered a write.', mitigations: ['audited_writes'], residual_risk: 'Audit rows live in the same database as the data.' },
  { id: 'TM-006', category: 'information_disclosure', asset: 'tenant data', threat: 'One tenant reads another tenant\'s deliveries, payloads or evidence.', mitigations: ['tenant_isolation', 'mcp_key_auth'], residual_risk: 'Isolation is logical in one shared database.' },
  { id: 'TM-007', category: 'information_disclosure', asset: 'signing secrets', threat: 'Secrets leak through the API, logs or a database dump.', mitigations: ['secrets_write_only'], residual_risk: 'SECRETS_KEY sits in configuration; no KMS.' },
  { id: 'TM-008', category: 'elevation_of_privilege', asset: 'private networks', threat: 'A destination URL is used to reach internal services (SSRF).', mitigations: ['ssrf_protection'], residual_risk: 'Allowlisted ranges are trusted by the operator.' },
  { id: 'TM-009', category: 'elevation_of_privilege', asset: 'MCP write tools', threat: 'An AI agent with a read key retries, replays or reconfigures deliveries.', mitigations: ['mcp_write_disabled_by_default', 'audited_writes'], residual_risk: 'Once a group is enabled for a key, every holder of that key can use it.' },
  { id: 'TM-010', category: 'denial_of_service', asset: 'delivery pipeline', threat: 'Redis loses queued jobs or a component restarts mid-flight.', mitigations: ['no_loss_on_queue_loss', 'durable_ingest'], residual_risk: 'Loss of PostgreSQL is not covered; there is no multi-region failover.' },
  { id: 'TM-011', category: 'denial_of_service', asset: "a tenant's API budget", threat: "A runaway or stolen MCP agent key spends the tenant's whole rate limit, so its other agents and the control API get 429.", mitigations: ['mcp_key_auth'], residual_risk: "Each MCP key has its own bucket, but several keys together can still spend the tenant's; the buckets live in Redis and fail open while it is unreachable." },
];

/** Security work known to be missing after v1. */
export const SECURITY_GAPS = [
  { id: 'SG-001', title: 'Mutual TLS for MCP clients', description: 'SPEC allows MCP authentication by mTLS; only API keys are implemented.', severity: 'medium' },
  { id: 'SG-002', title: 'Publicly verifiable evidence', description: 'Receipts and roots are HMAC-keyed; Ed25519 signatures and anchoring roots in an external transparency log are not built.', severity: 'medium' },
  { id: 'SG-003', title: 'Key management service', description: 'SECRETS_KEY and EVIDENCE_KEY come from configuration; no KMS/HSM, no key rotation procedure for the evidence key.', severity: 'high' },
  { id: 'SG-004', title: 'Automatic certificate rotation', description: 'mTLS client certificates are rotated manually.', severity: 'low' },
  { id: 'SG-005', title: 'Write-once audit storage', description: 'Audit rows can be altered by anyone with database write access.', severity: 'medium' },
  {
    // Was "Per-key rate limits for MCP agents": built (TRUST-003); what is left is the outage.
    id: 'SG-006',
    title: 'Rate limits fail open without Redis',
    description:
      "The rate limits (the tenant's per-plan bucket, shared by the control API and MCP, and each MCP key's own bucket) live in Redis, and the limiter fails open: while Redis is unreachable, no limit applies, to MCP calls or to the control API.",
    severity: 'low',
  },
  { id: 'SG-007', title: 'External security review', description: 'No penetration test or third-party audit has been performed.', severity: 'high' },
  { id: 'SG-008', title: 'Per-tenant evidence keys', description: 'One evidence key signs every tenant\'s receipts.', severity: 'low' },
  { id: 'SG-009', title: 'Chained Merkle roots', description: 'Each root stands alone (no previous-root hash, no consistency proofs): removing or re-issuing a sealed root is not evident from the roots that follow.', severity: 'medium' },
] as const;
