import type { ProofStatus } from './capability-types';
import { allNonClaims } from './non-claims';
import type { ResolvedCapability } from './proof-status';

export type EvidenceScope = 'local_mock_harness_only' | 'sandbox_ci' | 'staging' | 'production';

export interface ProofLevel {
  label: string;
  description: string;
  confidence: 'none' | 'low' | 'medium' | 'high' | 'maximum';
}

export const PROOF_LEVELS: Readonly<Record<ProofStatus, ProofLevel>> = {
  victory_locked: { label: 'Victory locked', description: 'Proven in production and locked against regression. Not used by this build.', confidence: 'maximum' },
  proven_local_mock: { label: 'Proven (local mock harness)', description: 'Named automated tests prove it against real PostgreSQL and Redis and loopback receivers; not evidence of production operation.', confidence: 'medium' },
  implementation_present: { label: 'Implementation present', description: 'The code exists; no named test proves it in this tree.', confidence: 'low' },
  planned: { label: 'Planned', description: 'Intended, not built.', confidence: 'none' },
  blocked: { label: 'Blocked', description: 'Intended, cannot be built until a dependency is resolved.', confidence: 'none' },
  not_claimed: { label: 'Not claimed', description: 'Explicitly not offered.', confidence: 'none' },
};

export interface ManifestCapability {
  id: string;
  proof_id: string;
  name: string;
  description: string;
  proof_status: ProofStatus;
  victory_locked: boolean;
  evidence_refs: string[];
  validator_refs: string[];
  integrity_ref: string;
  non_claims: string[];
}

/** The evidence manifest, field for field as SPEC.md defines it. */
export interface CapabilityManifest {
  '@context': { schema: string; xsd: string };
  '@type': string[];
  schema_version: string;
  generated_at: string;
  product: string;
  repository: string;
  evidence_scope: EvidenceScope;
  proof_levels: Record<string, ProofLevel>;
  capabilities: ManifestCapability[];
  compliance_mappings: { ref: string; entries_count: number };
  validation: { make_targets: string[]; validator_script: string };
  non_claims: string[];
}

export interface ManifestInput {
  capabilities: readonly ResolvedCapability[];
  generatedAt: Date;
  repository: string;
  evidenceScope: EvidenceScope;
  complianceRef: string;
  complianceEntries: number;
}

const VALIDATORS = ['packages/evidence/src/discovery/proof-status.ts', 'packages/evidence/src/discovery/manifest-schema.ts', 'test/discovery-documents.test.ts'];

export function capabilityManifest(input: ManifestInput): CapabilityManifest {
  return {
    '@context': { schema: 'https://schema.org/', xsd: 'http://www.w3.org/2001/XMLSchema#' },
    '@type': ['schema:Dataset', 'CapabilityManifest'],
    schema_version: '1.0.0',
    generated_at: input.generatedAt.toISOString(),
    product: 'Hookline',
    repository: input.repository,
    evidence_scope: input.evidenceScope,
    proof_levels: { ...PROOF_LEVELS },
    capabilities: input.capabilities.map((c) => ({
      id: c.def.id,
      proof_id: c.def.proof_id,
      name: c.def.name,
      description: c.def.description,
      proof_status: c.status,
      victory_locked: c.status === 'victory_locked',
      evidence_refs: c.evidence_refs,
      validator_refs: VALIDATORS,
      integrity_ref: c.integrity_ref,
      non_claims: [...c.def.non_claims],
    })),
    compliance_mappings: { ref: input.complianceRef, entries_count: input.complianceEntries },
    validation: { make_targets: ['typecheck', 'test'], validator_script: 'test/discovery-documents.test.ts' },
    non_claims: allNonClaims(),
  };
}
