import { canonical } from './canonical';
import { leafHash } from './merkle';

/**
 * A delivery receipt (version 1): what one attempt sent, where, when, and what came back,
 * as hashes. `signature` is HMAC-SHA256 over the canonical form of every other field;
 * the Merkle leaf is the canonical form of the whole receipt, signature included.
 */
export interface Receipt {
  [field: string]: string | number | null;
  v: 1;
  id: string;
  tenant_id: string;
  attempt_id: string;
  delivery_id: string;
  event_id: string;
  destination_id: string;
  destination_origin: string | null;
  attempt_number: number;
  outcome: 'succeeded' | 'failed';
  status_code: number | null;
  error_kind: string | null;
  started_at: string;
  completed_at: string;
  duration_ms: number;
  request_body_sha256: string | null;
  response_body_sha256: string | null;
  issued_at: string;
  key_id: string;
  signature: string;
}

/** A sealed Merkle root: the tree of one tenant's receipts issued in [window_start, window_end). */
export interface MerkleRootRecord {
  [field: string]: string | number;
  v: 1;
  id: string;
  tenant_id: string;
  window_start: string;
  window_end: string;
  root_hash: string;
  leaf_count: number;
  created_at: string;
  key_id: string;
  signature: string;
}

/** Where a receipt sits in its root's tree; `audit_path` is hex, nearest sibling first. */
export interface InclusionProof {
  root_id: string;
  leaf_index: number;
  tree_size: number;
  leaf_hash: string;
  audit_path: string[];
}

/** A receipt with its proof and root: what `pnpm evidence:verify` checks. Proof and root are null until sealed. */
export interface EvidenceBundle {
  receipt: Receipt;
  proof: InclusionProof | null;
  root: MerkleRootRecord | null;
}

export function receiptLeafHash(receipt: Receipt): Buffer {
  return leafHash(canonical(receipt));
}

/** scheme://host[:port] only: a URL path or query may carry tokens, userinfo may carry a password. */
export function originOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}
