// canonical() keeps each record shape's sorted key list, keyed by the shape's keys. Keys may
// hold any character: two different key lists must never share an entry (a receipt with an
// extra field would otherwise canonicalise, in a process that had verified a crafted bundle
// before, as the genuine receipt: same HMAC). And verifyReceipt refuses a receipt whose
// fields are not exactly a receipt's.
import { canonical, leafHash, signRecord, verifyBundles, verifyReceipt, type InclusionProof, type MerkleRootRecord, type Receipt } from '@hookline/evidence';
import type { Scalar } from '../packages/evidence/src/canonical';

// The definition every receipt was signed with: keys sorted, JSON values.
const reference = (r: Record<string, Scalar>): string => JSON.stringify(Object.fromEntries(Object.keys(r).sort().map((k) => [k, r[k]])));

test("records whose key lists are the same text once joined by '\\n' are each canonicalised by their own keys", () => {
  const crafted = { a: 1, 'b\nc': 2 };
  const plain = { a: 1, b: 2, c: 3 };
  expect(canonical(crafted)).toBe(reference(crafted));
  expect(canonical(plain)).toBe('{"a":1,"b":2,"c":3}');
  expect(canonical(plain)).not.toBe(canonical(crafted));
  // The other way round, and with the separator at either end of a key.
  const first = { x: 1, y: 2, z: 3 };
  const second = { x: 1, 'y\nz': 2 };
  expect(canonical(first)).toBe(reference(first));
  expect(canonical(second)).toBe(reference(second));
  const third = { 'p\n': 1, q: 2 };
  const fourth = { p: 1, '\nq': 2 };
  expect([canonical(third), canonical(fourth)]).toEqual([reference(third), reference(fourth)]);
});

const key = Buffer.alloc(32, 9);

/** A signed receipt alone under a signed root (a tree of one leaf), as the API answers it. */
function bundle(): { receipt: Receipt; proof: InclusionProof; root: MerkleRootRecord } {
  const unsigned: Receipt = {
    v: 1,
    id: 'rcp_01m80000000000000000000000',
    tenant_id: 'ten_01m80000000000000000000000',
    attempt_id: 'att_01m80000000000000000000000',
    delivery_id: 'dlv_01m80000000000000000000000',
    event_id: 'evt_01m80000000000000000000000',
    destination_id: 'dst_01m80000000000000000000000',
    destination_origin: 'https://example.test',
    attempt_number: 1,
    outcome: 'failed',
    status_code: 500,
    error_kind: null,
    started_at: '2026-12-01T10:00:00.000Z',
    completed_at: '2026-12-01T10:00:00.120Z',
    duration_ms: 120,
    request_body_sha256: 'a'.repeat(64),
    response_body_sha256: 'b'.repeat(64),
    issued_at: '2026-12-01T10:00:02.000Z',
    key_id: 'ek_test',
    signature: '',
  };
  const receipt = { ...unsigned, signature: signRecord(key, unsigned) };
  const leaf = leafHash(canonical(receipt)).toString('hex');
  const root: MerkleRootRecord = {
    v: 1,
    id: 'mrk_01m80000000000000000000000',
    tenant_id: receipt.tenant_id,
    window_start: '2026-12-01T10:00:00.000Z',
    window_end: '2026-12-01T10:01:00.000Z',
    root_hash: leaf,
    leaf_count: 1,
    created_at: '2026-12-01T10:01:02.000Z',
    key_id: 'ek_test',
    signature: '',
  };
  return { receipt, proof: { root_id: root.id, leaf_index: 0, tree_size: 1, leaf_hash: leaf, audit_path: [] }, root: { ...root, signature: signRecord(key, root) } };
}

test('a receipt with a field more or less fails verification, also after a crafted bundle whose keys collide with its own', () => {
  const b = bundle();
  expect(verifyReceipt(b.receipt, b.proof, b.root, { key })).toMatchObject({ valid: true });

  // A crafted bundle whose key list, joined by '\n', is the genuine one's plus a field "note"
  // ("signature\nnote" is one key), verified first in the same process...
  const { signature, ...rest } = b.receipt;
  const crafted = { ...rest, 'signature\nnote': signature } as unknown as Receipt;
  expect(verifyReceipt(crafted, b.proof, b.root, { key }).valid).toBe(false);
  // ... then the genuine receipt with that field added: its extra field is not ignored.
  const extended = { ...b.receipt, note: 'paid in full' } as Receipt;
  const r = verifyReceipt(extended, b.proof, b.root, { key });
  expect(r.valid).toBe(false);
  expect(r.checks['receipt_signature']).toBe(false);
  expect(r.checks['leaf_hash_matches_receipt']).toBe(false);
  expect(r).toMatchObject({ reason: 'receipt_fields failed' });

  // A field less fails too; the genuine receipt still verifies.
  const { error_kind: _e, ...shorter } = b.receipt;
  expect(verifyReceipt(shorter as Receipt, b.proof, b.root, { key })).toMatchObject({ valid: false, reason: 'receipt_fields failed' });
  expect(verifyReceipt(b.receipt, b.proof, b.root, { key })).toMatchObject({ valid: true, checks: { receipt_fields: true } });

  // The CLI's report: the same line format, naming the check.
  const report = verifyBundles({ receipts: [b, { ...b, receipt: extended }] }, key);
  expect(report).toEqual({ ok: false, lines: [expect.stringMatching(/^ok {3}rcp_\S+: leaf 0 of 1 under root mrk_\S+ \([0-9a-f]{64}\), HMACs checked$/), `FAIL ${b.receipt.id}: receipt_fields failed`] });
});
