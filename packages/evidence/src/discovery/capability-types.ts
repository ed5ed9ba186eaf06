export const PROOF_STATUSES = ['victory_locked', 'proven_local_mock', 'implementation_present', 'planned', 'blocked', 'not_claimed'] as const;
export type ProofStatus = (typeof PROOF_STATUSES)[number];

/** A test file and the names of tests in it that prove a capability. */
export interface ProofRef {
  file: string;
  tests: readonly string[];
}

/**
 * One capability as the code declares it. Its status is not declared: it is worked out
 * when a document is generated, from which of the named files and tests really exist.
 */
export interface CapabilityDef {
  id: string;
  /** PROOF-nnn (runtime), TRUST-nnn (trust) or GAP-nnn (not built). */
  proof_id: string;
  name: string;
  description: string;
  /** Source files that implement it (repository-relative). */
  implementation: readonly string[];
  /** Tests that prove it; empty for what is not built. */
  proofs: readonly ProofRef[];
  /** The status when it is not implemented: planned, blocked or not_claimed. */
  otherwise: 'planned' | 'blocked' | 'not_claimed';
  non_claims: readonly string[];
}
