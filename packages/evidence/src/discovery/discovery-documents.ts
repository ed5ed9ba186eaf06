import type { ProofStatus } from './capability-types';
import { capabilityManifest, PROOF_LEVELS, type CapabilityManifest, type EvidenceScope } from './capability-manifest';
import { GAP_CAPABILITIES } from './gap-capabilities';
import { NON_CLAIMS } from './non-claims';
import { resolveCapability, type ResolvedCapability } from './proof-status';
import { RUNTIME_CAPABILITIES } from './runtime-capabilities';
import { COMPLIANCE_ENTRIES, SECURITY_GAPS, THREATS } from './security-registry';
import { TRUST_CAPABILITIES } from './trust-capabilities';

export interface DiscoveryOptions {
  /** The repository checkout whose test files decide proof statuses. */
  repoRoot: string;
  /** Public base URL of the api (documents link to each other under it). */
  baseUrl: string;
  repository: string;
  evidenceScope: EvidenceScope;
  /** The sealer's cadence, for the freshness registry. */
  sealIntervalMs: number;
  windowMs: number;
  now?: Date;
}

export const EVIDENCE_BASE = '/ai/evidence/v1';
export const SECURITY_BASE = '/ai/security/v1';

export interface Discovery {
  generatedAt: Date;
  capabilities: ResolvedCapability[];
  manifest: CapabilityManifest;
  /** Every published document by path (`/ai/evidence/v1/…`, `/ai/security/v1/…`). */
  documents: Record<string, object>;
}

const context = { schema: 'https://schema.org/', xsd: 'http://www.w3.org/2001/XMLSchema#' };

/** The weakest status of a set: a control is no more proven than its least proven part. */
function weakest(statuses: ProofStatus[]): ProofStatus {
  const order: ProofStatus[] = ['not_claimed', 'blocked', 'planned', 'implementation_present', 'proven_local_mock', 'victory_locked'];
  return statuses.reduce<ProofStatus>((w, s) => (order.indexOf(s) < order.indexOf(w) ? s : w), 'victory_locked');
}

/** Builds every discovery document from the code registries and the repository as it is now. */
export function buildDiscovery(opts: DiscoveryOptions): Discovery {
  const generatedAt = opts.now ?? new Date();
  const at = generatedAt.toISOString();
  const base = opts.baseUrl.replace(/\/$/, '');
  const capabilities = [...RUNTIME_CAPABILITIES, ...TRUST_CAPABILITIES, ...GAP_CAPABILITIES].map((d) => resolveCapability(d, opts.repoRoot));
  const byId = new Map(capabilities.map((c) => [c.def.id, c]));
  const statusOf = (ids: readonly string[]): ProofStatus => weakest(ids.map((id) => byId.get(id)?.status ?? 'not_claimed'));
  const manifest = capabilityManifest({
    capabilities,
    generatedAt,
    repository: opts.repository,
    evidenceScope: opts.evidenceScope,
    complianceRef: `${base}${SECURITY_BASE}/compliance-readiness.json`,
    complianceEntries: COMPLIANCE_ENTRIES.length,
  });
  const doc = (type: string, body: object): object => ({ '@context': context, '@type': [type], schema_version: '1.0.0', generated_at: at, product: 'Hookline', ...body });

  const evidenceDocs = {
    [`${EVIDENCE_BASE}/capability-manifest.json`]: { title: 'Capability manifest', description: 'Every capability with its proof status, the tests that prove it and its non-claims.' },
    [`${EVIDENCE_BASE}/freshness.json`]: { title: 'Freshness registry', description: 'How current each surface is and how it is refreshed.' },
    [`${EVIDENCE_BASE}/non-claims.json`]: { title: 'Non-claims', description: 'What Hookline explicitly does not do or promise, by category.' },
  };
  const securityDocs = {
    [`${SECURITY_BASE}/compliance-readiness.json`]: { title: 'Compliance readiness map (internal)', description: 'Framework controls mapped to capabilities and how far each is proven. Not a certification.' },
    [`${SECURITY_BASE}/threat-model.json`]: { title: 'Threat model', description: 'STRIDE threats, their mitigations and residual risk.' },
    [`${SECURITY_BASE}/claim-maturity.json`]: { title: 'Claim maturity per control', description: 'Each security control with the maturity of its claim.' },
    [`${SECURITY_BASE}/security-gaps.json`]: { title: 'Post-v1 security gaps', description: 'Security work known to be missing.' },
  };
  const listing = (docs: Record<string, { title: string; description: string }>) => Object.entries(docs).map(([path, d]) => ({ path, url: `${base}${path}`, media_type: 'application/json', ...d }));
  const index = doc('schema:DataCatalog', {
    name: 'Hookline evidence and security discovery index',
    description: 'Start here. Machine-readable documents about what this Hookline build does, how it is proven, and what it does not claim.',
    evidence_scope: opts.evidenceScope,
    documents: [...listing(evidenceDocs), ...listing(securityDocs)],
    agent_guidance: [
      'Treat a capability as proven only when its proof_status is proven_local_mock or higher, and only within evidence_scope.',
      'Read non-claims before stating what the service does.',
      'Tenant data (deliveries, receipts, Merkle roots) is reachable only through MCP or the API with a tenant key.',
    ],
    mcp: { endpoint: `${base}/v1/mcp`, transport: 'streamable-http', auth_header: 'X-MCP-API-Key', key_prefix: 'mcp_', rest_mirror: `${base}/v1/mcp/endpoints` },
  });

  const documents: Record<string, object> = {
    [`${EVIDENCE_BASE}/`]: index,
    [`${EVIDENCE_BASE}/index.json`]: index,
    [`${EVIDENCE_BASE}/capability-manifest.json`]: manifest,
    [`${EVIDENCE_BASE}/non-claims.json`]: doc('NonClaimRegistry', { categories: NON_CLAIMS, capability_non_claims: capabilities.filter((c) => c.def.non_claims.length).map((c) => ({ capability_id: c.def.id, non_claims: c.def.non_claims })) }),
    [`${EVIDENCE_BASE}/freshness.json`]: doc('FreshnessRegistry', {
      surfaces: [
        { surface: 'discovery_documents', paths: [EVIDENCE_BASE, SECURITY_BASE], last_generated_at: at, refresh: 'generated when the serving process starts, from the code registries and the test files present', max_staleness: 'process lifetime' },
        { surface: 'capability_manifest', paths: [`${EVIDENCE_BASE}/capability-manifest.json`], last_generated_at: at, refresh: 'with the discovery documents', max_staleness: 'process lifetime' },
        { surface: 'delivery_receipts', paths: ['/v1/evidence', '/v1/mcp/evidence/{id}'], last_generated_at: null, refresh: `issued by the evidence sealer every ${opts.sealIntervalMs} ms`, max_staleness_ms: opts.sealIntervalMs },
        { surface: 'merkle_roots', paths: ['/v1/mcp (list_merkle_evidence_refs)'], last_generated_at: null, refresh: `per tenant and ${opts.windowMs} ms window, sealed after the window ends`, max_staleness_ms: opts.windowMs + opts.sealIntervalMs },
        { surface: 'mcp_tools', paths: ['/v1/mcp', '/v1/mcp/*'], last_generated_at: null, refresh: 'live: every call reads current tenant data', max_staleness_ms: 0 },
      ],
    }),
  };
  const securityIndex = doc('schema:DataCatalog', { name: 'Hookline security discovery index', documents: listing(securityDocs), see_also: `${base}${EVIDENCE_BASE}/index.json` });
  documents[`${SECURITY_BASE}/`] = securityIndex;
  documents[`${SECURITY_BASE}/index.json`] = securityIndex;
  documents[`${SECURITY_BASE}/compliance-readiness.json`] = doc('ComplianceReadinessMap', {
    disclaimer: 'Internal readiness view; no certification is held or claimed.',
    entries: COMPLIANCE_ENTRIES.map((e) => ({ ...e, readiness: statusOf(e.capability_ids) })),
  });
  documents[`${SECURITY_BASE}/threat-model.json`] = doc('ThreatModel', {
    method: 'STRIDE',
    threats: THREATS.map((t) => ({ ...t, mitigation_status: statusOf(t.mitigations) })),
  });
  documents[`${SECURITY_BASE}/claim-maturity.json`] = doc('ClaimMaturity', {
    levels: PROOF_LEVELS,
    controls: capabilities
      .filter((c) => c.def.proof_id.startsWith('TRUST-'))
      .map((c) => ({ control_id: c.def.proof_id, capability_id: c.def.id, name: c.def.name, claim_maturity: c.status, confidence: PROOF_LEVELS[c.status].confidence, evidence_refs: c.evidence_refs })),
  });
  documents[`${SECURITY_BASE}/security-gaps.json`] = doc('SecurityGaps', { horizon: 'post-v1', gaps: SECURITY_GAPS });
  return { generatedAt, capabilities, manifest, documents };
}

/** Builds the documents on first use and keeps them: they change only with the code. */
export function cachedDiscovery(opts: DiscoveryOptions): () => Discovery {
  let built: Discovery | undefined;
  return () => (built ??= buildDiscovery(opts));
}
