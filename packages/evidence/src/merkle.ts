import { EMPTY_ROOT, nodeHash } from './merkle-hash';
import { merkleTree, treePath } from './merkle-tree';

export { leafHash, nodeHash } from './merkle-hash';

/** MTH(D[n]) over leaf hashes already computed with `leafHash`. */
export function merkleRoot(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT();
  const { levels } = merkleTree(leaves);
  return levels[levels.length - 1]![0]!;
}

/**
 * PATH(m, D[n]): the audit path of leaf `index`, nearest sibling first. Builds the whole tree
 * (O(n)): for several proofs of one tree, build it once with `merkleTree` and read each path
 * with `treePath` (O(log n)).
 */
export function inclusionPath(leaves: readonly Buffer[], index: number): Buffer[] {
  return treePath(merkleTree(leaves), index);
}

/** RFC 9162 §2.1.3.2: does `path` prove leaf `index` of a tree of `size` under `root`? */
export function verifyInclusion(leaf: Buffer, index: number, size: number, path: readonly Buffer[], root: Buffer): boolean {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && r.equals(root);
}
