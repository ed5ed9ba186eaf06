import type { EvidenceBundle } from './receipt';
import { verifyReceipt, type VerifyResult } from './verify-receipt';

export interface BundleReport {
  ok: boolean;
  lines: string[];
}

/**
 * Bundles from what the API answers: one bundle, an array, `{ receipts: [...] }`, or the
 * `GET /v1/evidence` list (`{ evidence: [{ …, receipts: [...] }] }`).
 */
export function bundlesIn(doc: unknown): EvidenceBundle[] {
  if (Array.isArray(doc)) return doc as EvidenceBundle[];
  const o = (doc ?? {}) as Record<string, unknown>;
  if (Array.isArray(o['receipts'])) return o['receipts'] as EvidenceBundle[];
  if (Array.isArray(o['evidence'])) return (o['evidence'] as Record<string, unknown>[]).flatMap((e) => (Array.isArray(e['receipts']) ? (e['receipts'] as EvidenceBundle[]) : [e as unknown as EvidenceBundle]));
  return o['receipt'] ? [o as unknown as EvidenceBundle] : [];
}

/** Verifies every bundle of a JSON document; with a key the HMACs are checked too. */
export function verifyBundles(doc: unknown, key?: Buffer): BundleReport {
  const bundles = bundlesIn(doc);
  if (!bundles.length) return { ok: false, lines: ['FAIL no receipts found in the document'] };
  const lines: string[] = [];
  let ok = true;
  for (const b of bundles) {
    const id = b?.receipt?.id ?? '(no id)';
    if (!b?.receipt || !b.proof || !b.root) {
      ok = false;
      lines.push(`FAIL ${id}: not sealed into a Merkle root yet (no proof); try again after the window is sealed`);
      continue;
    }
    let r: VerifyResult;
    try {
      r = verifyReceipt(b.receipt, b.proof, b.root, { key });
    } catch (err) {
      // An edited file can break the shape itself (an audit_path that is not a list): that
      // bundle fails, and the others are still reported.
      r = { valid: false, checks: {}, reason: `malformed bundle (${(err as Error).message})` };
    }
    ok &&= r.valid;
    lines.push(r.valid ? `ok   ${id}: leaf ${b.proof.leaf_index} of ${b.proof.tree_size} under root ${b.root.id} (${b.root.root_hash})${key ? ', HMACs checked' : ''}` : `FAIL ${id}: ${r.reason}`);
  }
  return { ok, lines };
}
