// Inclusion proofs read from a tree built once per root: the same proofs as before, O(n) hashes per root.
import * as crypto from 'node:crypto';
import {
  bundlesFor, evidenceKey, inclusionPath, issueReceipts, leafHash, merkleRoot, merkleTree, nodeHash, sealWindow, treePath, verifyInclusion,
} from '@hookline/evidence';
import { createTestDatabase, type TestDatabase } from '@hookline/testing';
import { attemptMaker } from './evidence-attempts';

// The implementation this replaced, kept verbatim as the reference: every proof recomputed its
// sibling subtrees from the leaves (O(n) hashes per proof).
function oldSplit(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}
function oldMerkleRoot(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return crypto.createHash('sha256').digest();
  let level = [...leaves];
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return level[0]!;
}
function oldInclusionPath(leaves: readonly Buffer[], index: number): Buffer[] {
  if (index < 0 || index >= leaves.length) throw new RangeError(`leaf ${index} is outside a tree of ${leaves.length}`);
  const path: Buffer[] = [];
  let lo = 0;
  let hi = leaves.length;
  let m = index;
  const stack: Buffer[] = [];
  while (hi - lo > 1) {
    const k = oldSplit(hi - lo);
    if (m < k) {
      stack.push(oldMerkleRoot(leaves.slice(lo + k, hi)));
      hi = lo + k;
    } else {
      stack.push(oldMerkleRoot(leaves.slice(lo, lo + k)));
      lo += k;
      m -= k;
    }
  }
  while (stack.length) path.push(stack.pop()!);
  return path;
}

const hex = (bs: Buffer[]): string[] => bs.map((b) => b.toString('hex'));
const leavesOf = (n: number): Buffer[] => Array.from({ length: n }, (_, i) => leafHash(`leaf ${n}/${i}`));

// The module object itself (a namespace import would be a copy): the code under test calls its createHash.
const nodeCrypto = jest.requireActual<typeof crypto>('node:crypto');

/** How many hashes `fn` computes (awaited). */
async function hashesIn<T>(fn: () => T | Promise<T>): Promise<{ out: T; hashes: number }> {
  const spy = jest.spyOn(nodeCrypto, 'createHash');
  try {
    const out = await fn();
    return { out, hashes: spy.mock.calls.length };
  } finally {
    spy.mockRestore();
  }
}

test('a built tree gives the root and every audit path of the previous implementation, n = 1..70', () => {
  for (let n = 1; n <= 70; n++) {
    const leaves = leavesOf(n);
    const tree = merkleTree(leaves);
    const root = oldMerkleRoot(leaves);
    expect(tree.size).toBe(n);
    expect(tree.levels[tree.levels.length - 1]).toEqual([root]);
    expect(merkleRoot(leaves).equals(root)).toBe(true);
    for (let i = 0; i < n; i++) {
      const want = hex(oldInclusionPath(leaves, i));
      expect({ n, i, path: hex(treePath(tree, i)) }).toEqual({ n, i, path: want });
      expect({ n, i, path: hex(inclusionPath(leaves, i)) }).toEqual({ n, i, path: want });
      expect(verifyInclusion(leaves[i]!, i, n, treePath(tree, i), root)).toBe(true);
    }
    for (const bad of [-1, n, 0.5]) expect(() => treePath(tree, bad)).toThrow(RangeError);
  }
  expect(merkleRoot([]).equals(oldMerkleRoot([]))).toBe(true);
  expect(() => treePath(merkleTree([]), 0)).toThrow(RangeError);
});

test('the proofs of every leaf of a tree cost n - 1 hashes in all, not n per proof', async () => {
  const n = 1000;
  const leaves = leavesOf(n);
  const { out: paths, hashes } = await hashesIn(() => {
    const tree = merkleTree(leaves);
    return leaves.map((_, i) => treePath(tree, i));
  });
  expect(hashes).toBe(n - 1);
  const root = merkleRoot(leaves);
  expect(paths.every((p, i) => verifyInclusion(leaves[i]!, i, n, p, root))).toBe(true);
});

describe('bundles of a sealed root', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('evtree');
  });
  afterAll(async () => {
    await db.drop();
  });

  test('a page with the proofs of all n receipts of one root hashes O(n) in all', async () => {
    const key = evidenceKey('test-secrets-key-0123456789abcdef');
    const maker = await attemptMaker(db.pool);
    const n = 150;
    for (let i = 0; i < n; i++) await maker.attempt();
    expect(await issueReceipts(db.pool, key)).toBe(n);
    const root = (await sealWindow(db.pool, key, maker.tenantId, { start: new Date(0), end: new Date(Date.now() + 3_600_000) }))!;
    expect(root.leaf_count).toBe(n);
    const { rows } = await db.pool.query('SELECT * FROM evidence_receipts WHERE merkle_root_id = $1 ORDER BY leaf_index', [root.id]);
    const { out: bundles, hashes } = await hashesIn(() => bundlesFor(db.pool, rows));
    // The tree once (n - 1 node hashes); the old way hashed about n per proof (~22,000 here).
    expect(hashes).toBeGreaterThanOrEqual(n - 1);
    expect(hashes).toBeLessThan(2 * n);
    expect(bundles).toHaveLength(n);
    for (const b of bundles) {
      expect(b.proof!.tree_size).toBe(n);
      const ok = verifyInclusion(Buffer.from(b.proof!.leaf_hash, 'hex'), b.proof!.leaf_index, n, b.proof!.audit_path.map((p) => Buffer.from(p, 'hex')), Buffer.from(root.root_hash, 'hex'));
      expect(ok).toBe(true);
    }
  });
});
