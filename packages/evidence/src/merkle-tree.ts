import { nodeHash } from './merkle-hash';

/**
 * A Merkle tree kept level by level, built once (n - 1 node hashes for n leaves) so that each
 * audit path is then read in O(log n) instead of rehashing sibling subtrees from the leaves.
 * levels[0] holds the leaves, each next level the parents of the one below, the last the root.
 * A level with an odd count carries its last node up unchanged: that is the tree of RFC 6962
 * / RFC 9162 (split at the largest power of two below n), the same root and the same paths.
 */
export interface MerkleTree {
  readonly size: number;
  readonly levels: readonly (readonly Buffer[])[];
}

export function merkleTree(leaves: readonly Buffer[]): MerkleTree {
  const levels: Buffer[][] = [[...leaves]];
  let level = levels[0]!;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    levels.push(next);
    level = next;
  }
  return { size: leaves.length, levels };
}

/**
 * PATH(m, D[n]) read from a built tree, nearest sibling first: at each level the sibling of the
 * node above leaf `index`, when it has one (a node carried up unchanged has none at that level).
 */
export function treePath(tree: MerkleTree, index: number): Buffer[] {
  if (!Number.isInteger(index) || index < 0 || index >= tree.size) throw new RangeError(`leaf ${index} is outside a tree of ${tree.size}`);
  const path: Buffer[] = [];
  let i = index;
  for (let l = 0; l < tree.levels.length - 1; l++) {
    const level = tree.levels[l]!;
    const sibling = i ^ 1;
    if (sibling < level.length) path.push(level[sibling]!);
    i >>= 1;
  }
  return path;
}
