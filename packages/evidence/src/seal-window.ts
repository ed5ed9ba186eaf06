import { newId, withTransaction, type Pool } from '@hookline/db';
import { signRecord } from './canonical';
import type { EvidenceKey } from './evidence-key';
import { merkleRoot } from './merkle';
import type { MerkleRootRecord } from './receipt';

export interface Window {
  start: Date;
  end: Date;
}

/**
 * A root covers at most this many receipts; a busier window gets several roots. Each root
 * is one transaction that locks, hashes and updates its receipts: at 50,000 the api held
 * every row in memory at once and PostgreSQL spent ~1.7 s of a core in one UPDATE (a
 * minute's window at 3,000 attempts/s), stalling deliveries meanwhile; at 10,000 one
 * UPDATE still took ~0.4-0.5 s (about 50 µs per receipt). 2,500 is ~0.13 s.
 */
export const MAX_LEAVES = 2_500;

/**
 * A sealing pass starts no new root once it has run this long (it always seals one), and
 * leaves the rest to the next pass. A minute's window at 1,000 attempts/s is ~3 s of one
 * PostgreSQL core to seal: done at once, it took one of the machine's two cores from the
 * pipeline for those seconds, once a minute; spread over passes every 2 s it takes at
 * most a quarter of one. The budget still seals ~10,000 receipts per second of passes.
 */
export const SEAL_BUDGET_MS = 500;

/**
 * Seals a tenant's unsealed receipts issued in [start, end) into one Merkle tree (leaves in
 * id order) and stores its signed root; returns null when there is nothing to seal. The
 * receipt rows are locked while sealing, so two sealers never put a receipt in two trees.
 */
export async function sealWindow(pool: Pool, key: EvidenceKey, tenantId: string, window: Window, maxLeaves = MAX_LEAVES): Promise<MerkleRootRecord | null> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string; leaf_hash: string }>(
      `SELECT id, leaf_hash FROM evidence_receipts
        WHERE tenant_id = $1 AND merkle_root_id IS NULL AND issued_at >= $2 AND issued_at < $3
        ORDER BY id LIMIT $4 FOR UPDATE`,
      [tenantId, window.start, window.end, maxLeaves],
    );
    if (!rows.length) return null;
    const unsigned: MerkleRootRecord = {
      v: 1,
      id: newId('mrk'),
      tenant_id: tenantId,
      window_start: window.start.toISOString(),
      window_end: window.end.toISOString(),
      root_hash: merkleRoot(rows.map((r) => Buffer.from(r.leaf_hash, 'hex'))).toString('hex'),
      leaf_count: rows.length,
      created_at: new Date().toISOString(),
      key_id: key.id,
      signature: '',
    };
    const root = { ...unsigned, signature: signRecord(key.key, unsigned) };
    await client.query(
      `INSERT INTO merkle_roots (id, tenant_id, window_start, window_end, root_hash, leaf_count, key_id, signature, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [root.id, tenantId, window.start, window.end, root.root_hash, root.leaf_count, key.id, root.signature, root.created_at],
    );
    await client.query(
      `UPDATE evidence_receipts r SET merkle_root_id = $1, leaf_index = s.ord - 1
         FROM unnest($2::text[]) WITH ORDINALITY AS s(id, ord) WHERE r.id = s.id`,
      [root.id, rows.map((r) => r.id)],
    );
    return root;
  });
}

export interface SealOptions {
  windowMs: number;
  before: Date;
  maxLeaves?: number;
  /** No new root once the pass has run this long (at least one root is sealed); default SEAL_BUDGET_MS. */
  budgetMs?: number;
  clock?: () => number;
}

/**
 * Seals every (tenant, window) that has unsealed receipts and ended before `before`,
 * oldest window first, until the budget is spent (the next pass goes on). Windows are
 * aligned to multiples of `windowMs` since the epoch. Returns the new roots.
 */
export async function sealDueWindows(pool: Pool, key: EvidenceKey, opts: SealOptions): Promise<MerkleRootRecord[]> {
  const maxLeaves = opts.maxLeaves ?? MAX_LEAVES;
  const clock = opts.clock ?? Date.now;
  const deadline = clock() + (opts.budgetMs ?? SEAL_BUDGET_MS);
  const end = new Date(Math.floor(opts.before.getTime() / opts.windowMs) * opts.windowMs);
  const { rows } = await pool.query<{ tenant_id: string; w: string }>(
    `SELECT tenant_id, floor(extract(epoch FROM issued_at) * 1000 / $1)::bigint AS w
       FROM evidence_receipts WHERE merkle_root_id IS NULL AND issued_at < $2
      GROUP BY 1, 2 ORDER BY 2, 1`,
    [opts.windowMs, end],
  );
  const roots: MerkleRootRecord[] = [];
  for (const r of rows) {
    const start = new Date(Number(r.w) * opts.windowMs);
    const window = { start, end: new Date(start.getTime() + opts.windowMs) };
    for (;;) {
      if (roots.length > 0 && clock() >= deadline) return roots;
      const root = await sealWindow(pool, key, r.tenant_id, window, maxLeaves);
      if (!root) break;
      roots.push(root);
      if (root.leaf_count < maxLeaves) break;
    }
  }
  return roots;
}
