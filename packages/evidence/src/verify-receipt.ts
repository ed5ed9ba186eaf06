import { checkSignature } from './canonical';
import { verifyInclusion } from './merkle';
import { receiptLeafHash, type InclusionProof, type MerkleRootRecord, type Receipt } from './receipt';

export interface VerifyResult {
  valid: boolean;
  checks: Record<string, boolean>;
  /** The first failed check, in words. */
  reason?: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

// The fields of a (version 1) receipt, as issued (issue-receipts.ts) and served (rows.ts).
// The leaf hash and the HMAC are of the canonical form of whatever fields a receipt has, so
// only a receipt with exactly these is the one that was hashed and signed: a field more (a
// claim the service never made) or less is refused, not read around.
const RECEIPT_FIELDS: ReadonlySet<string> = new Set([
  'v', 'id', 'tenant_id', 'attempt_id', 'delivery_id', 'event_id', 'destination_id', 'destination_origin', 'attempt_number',
  'outcome', 'status_code', 'error_kind', 'started_at', 'completed_at', 'duration_ms', 'request_body_sha256', 'response_body_sha256',
  'issued_at', 'key_id', 'signature',
]);

function exactFields(receipt: Receipt): boolean {
  const keys = Object.keys(receipt);
  return keys.length === RECEIPT_FIELDS.size && keys.every((k) => RECEIPT_FIELDS.has(k));
}

function hex(s: string): Buffer | null {
  return HEX64.test(s) ? Buffer.from(s, 'hex') : null;
}

/**
 * Verifies a receipt against its inclusion proof and root: the receipt must have exactly a
 * receipt's fields, the leaf hash is recomputed from it (so any edited field fails), the
 * audit path must lead to the root hash, and the proof must name that root and its size.
 * With the evidence key, the HMACs of the receipt and of the root are checked too; without
 * it, integrity rests on the root alone.
 */
export function verifyReceipt(receipt: Receipt, proof: InclusionProof, root: MerkleRootRecord, opts: { key?: Buffer } = {}): VerifyResult {
  const leaf = receiptLeafHash(receipt);
  const path = proof.audit_path.map(hex);
  const rootHash = hex(root.root_hash);
  const checks: Record<string, boolean> = {
    receipt_fields: exactFields(receipt),
    leaf_hash_matches_receipt: leaf.toString('hex') === proof.leaf_hash,
    proof_names_root: proof.root_id === root.id && proof.tree_size === root.leaf_count,
    same_tenant: receipt.tenant_id === root.tenant_id,
    inclusion: rootHash !== null && path.every((p) => p !== null) && verifyInclusion(leaf, proof.leaf_index, proof.tree_size, path as Buffer[], rootHash),
  };
  if (opts.key) {
    checks['receipt_signature'] = checkSignature(opts.key, receipt);
    checks['root_signature'] = checkSignature(opts.key, root);
  }
  const failed = Object.entries(checks).find(([, ok]) => !ok)?.[0];
  return failed ? { valid: false, checks, reason: `${failed} failed` } : { valid: true, checks };
}
