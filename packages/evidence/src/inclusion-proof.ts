import type { Pool } from '@hookline/db';
import { merkleTree, treePath, type MerkleTree } from './merkle-tree';
import type { EvidenceBundle } from './receipt';
import { receiptOf, rootOf, type ReceiptRow, type RootRow } from './rows';

/**
 * Bundles (receipt + inclusion proof + root) for receipt rows of one tenant. The leaves
 * of each root are read and its tree built once (O(n) hashes), however many of its receipts
 * are asked for; each proof is then read from the tree (O(log n)). Roots and leaves are read
 * only within the rows' tenant(s): a root and its leaves are all of one tenant.
 */
export async function bundlesFor(pool: Pool, rows: readonly ReceiptRow[]): Promise<EvidenceBundle[]> {
  const rootIds = [...new Set(rows.map((r) => r.merkle_root_id).filter((id): id is string => id !== null))];
  const tenantIds = [...new Set(rows.map((r) => r.tenant_id))];
  const trees = new Map<string, { root: RootRow; leaves: Buffer[]; tree?: MerkleTree }>();
  if (rootIds.length) {
    const [roots, leaves] = await Promise.all([
      pool.query<RootRow>('SELECT * FROM merkle_roots WHERE id = ANY($1::text[]) AND tenant_id = ANY($2::text[])', [rootIds, tenantIds]),
      pool.query<{ merkle_root_id: string; leaf_hash: string }>(
        'SELECT merkle_root_id, leaf_hash FROM evidence_receipts WHERE merkle_root_id = ANY($1::text[]) AND tenant_id = ANY($2::text[]) ORDER BY merkle_root_id, leaf_index',
        [rootIds, tenantIds],
      ),
    ]);
    for (const root of roots.rows) trees.set(root.id, { root, leaves: [] });
    for (const l of leaves.rows) trees.get(l.merkle_root_id)?.leaves.push(Buffer.from(l.leaf_hash, 'hex'));
  }
  return rows.map((r) => {
    const tree = r.merkle_root_id ? trees.get(r.merkle_root_id) : undefined;
    if (!tree || r.leaf_index === null) return { receipt: receiptOf(r), proof: null, root: null };
    tree.tree ??= merkleTree(tree.leaves);
    return {
      receipt: receiptOf(r),
      proof: {
        root_id: tree.root.id,
        leaf_index: r.leaf_index,
        tree_size: tree.leaves.length,
        leaf_hash: r.leaf_hash,
        audit_path: treePath(tree.tree, r.leaf_index).map((b) => b.toString('hex')),
      },
      root: rootOf(tree.root),
    };
  });
}

/** One receipt with its proof (proof and root null while unsealed); null when unknown to the tenant. */
export async function inclusionProof(pool: Pool, receiptId: string, tenantId?: string): Promise<EvidenceBundle | null> {
  const { rows } = await pool.query<ReceiptRow>('SELECT * FROM evidence_receipts WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)', [receiptId, tenantId ?? null]);
  const row = rows[0];
  return row ? ((await bundlesFor(pool, [row]))[0] ?? null) : null;
}
