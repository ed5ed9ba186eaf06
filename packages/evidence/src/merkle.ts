import { createHash } from 'node:crypto';

/**
 * Merkle trees hashed as RFC 6962 / RFC 9162 (Certificate Transparency) hash them:
 * leaves and interior nodes are domain-separated (0x00 / 0x01 prefixes), so a leaf can
 * never be passed off as a node, and an odd subtree is not duplicated but split at the
 * largest power of two.
 */
const LEAF = Buffer.from([0x00]);
const NODE = Buffer.from([0x01]);

function sha256(...parts: Buffer[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

export function leafHash(data: Buffer | string): Buffer {
  return sha256(LEAF, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
}

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return sha256(NODE, left, right);
}

/** The largest power of two strictly smaller than n (n >= 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) over leaf hashes already computed with `leafHash`. */
export function merkleRoot(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return sha256();
  // Bottom-up, level by level: the same tree as the recursive definition because a level
  // with an odd count carries its last node up unchanged.
  let level = [...leaves];
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return level[0]!;
}

/** PATH(m, D[n]): the audit path of leaf `index`, nearest sibling first. */
export function inclusionPath(leaves: readonly Buffer[], index: number): Buffer[] {
  if (index < 0 || index >= leaves.length) throw new RangeError(`leaf ${index} is outside a tree of ${leaves.length}`);
  const path: Buffer[] = [];
  let lo = 0;
  let hi = leaves.length;
  let m = index;
  const stack: Buffer[] = [];
  // Walk down from the root, remembering the sibling subtree at each split.
  while (hi - lo > 1) {
    const k = split(hi - lo);
    if (m < k) {
      stack.push(merkleRoot(leaves.slice(lo + k, hi)));
      hi = lo + k;
    } else {
      stack.push(merkleRoot(leaves.slice(lo, lo + k)));
      lo += k;
      m -= k;
    }
  }
  while (stack.length) path.push(stack.pop()!);
  return path;
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
