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

/** MTH({}) = SHA-256 of the empty string. */
export const EMPTY_ROOT = (): Buffer => sha256();
