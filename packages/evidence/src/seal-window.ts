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
 * is one transaction that reads, hashes and updates its receipts: at 50,000 the api held
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
 * A root's receipts: the tenant's unsealed ones of the window, oldest first (issue time,
 * then id). Read in that order from the (merkle_root_id, issued_at) index, so a chunk reads
 * only its own rows. In id order the planner walked the primary key from the table's first
 * receipt, past every receipt sealed before: 199 ms per 2,500-receipt chunk in the benchmark
 * once the table held a few hundred thousand.
 */
export const SEAL_SELECT_SQL = `SELECT id, leaf_hash FROM evidence_receipts
  WHERE tenant_id = $1 AND merkle_root_id IS NULL AND issued_at >= $2 AND issued_at < $3
  ORDER BY merkle_root_id, issued_at, id LIMIT $4`;

/** Thrown when another sealer sealed some of a root's receipts first: nothing of this root is stored. */
export class ConcurrentSealError extends Error {
  constructor(expected: number, sealed: number) {
    super(`${expected - sealed} of ${expected} receipts were sealed by another sealer meanwhile; this root was not stored`);
    this.name = 'ConcurrentSealError';
  }
}

export interface SealRange {
  /**
   * The issue time of the tenant's oldest unsealed receipt of the window, when known (as
   * PostgreSQL printed it): the range starts there instead of at the window's start, past
   * the entries of the receipts sealed in earlier chunks (dead until vacuum), which a
   * bitmap scan would otherwise read again for every chunk.
   */
  from?: string;
}

/**
 * Seals a tenant's unsealed receipts issued in [start, end) into one Merkle tree (leaves in
 * issue order, then id order) and stores its signed root; returns null when there is nothing
 * to seal. Two sealers never put a receipt in two trees: the receipts are read without
 * locks (the sealer runs under an advisory lock, and a row lock is a write of every row,
 * ~2,500 per root), and the update takes only receipts still unsealed; if another sealer
 * took any first, the transaction rolls back with ConcurrentSealError.
 */
export async function sealWindow(pool: Pool, key: EvidenceKey, tenantId: string, window: Window, maxLeaves = MAX_LEAVES, range: SealRange = {}): Promise<MerkleRootRecord | null> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string; leaf_hash: string }>(SEAL_SELECT_SQL, [tenantId, range.from ?? window.start, window.end, maxLeaves]);
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
    const sealed = await client.query(
      `UPDATE evidence_receipts r SET merkle_root_id = $1, leaf_index = s.ord - 1
         FROM unnest($2::text[]) WITH ORDINALITY AS s(id, ord) WHERE r.id = s.id AND r.merkle_root_id IS NULL`,
      [root.id, rows.map((r) => r.id)],
    );
    if (sealed.rowCount !== rows.length) throw new ConcurrentSealError(rows.length, sealed.rowCount ?? 0);
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
 * The oldest unsealed receipt issued before $2, and its window. An ordered index scan with
 * LIMIT 1 on (merkle_root_id, issued_at): sealing leaves each receipt's version from before
 * it was sealed in that index (dead until vacuum), and a GROUP BY over the range read them
 * by a bitmap scan that went to the table for every one on every pass (38 ms per pass in
 * the benchmark at ~3,000 attempts/s), while an index scan marks the dead entries it meets
 * in the index so that later passes skip them.
 */
export const OLDEST_DUE_SQL = `SELECT tenant_id, floor(extract(epoch FROM issued_at) * 1000 / $1)::bigint AS w, issued_at::text AS since
  FROM evidence_receipts WHERE merkle_root_id IS NULL AND issued_at < $2
  ORDER BY merkle_root_id, issued_at LIMIT 1`;

/**
 * Seals every (tenant, window) that has unsealed receipts and ended before `before`,
 * oldest first, until the budget is spent (the next pass goes on). Windows are aligned to
 * multiples of `windowMs` since the epoch. Returns the new roots.
 */
export async function sealDueWindows(pool: Pool, key: EvidenceKey, opts: SealOptions): Promise<MerkleRootRecord[]> {
  const maxLeaves = opts.maxLeaves ?? MAX_LEAVES;
  const clock = opts.clock ?? Date.now;
  const deadline = clock() + (opts.budgetMs ?? SEAL_BUDGET_MS);
  const end = new Date(Math.floor(opts.before.getTime() / opts.windowMs) * opts.windowMs);
  const roots: MerkleRootRecord[] = [];
  while (roots.length === 0 || clock() < deadline) {
    const { rows } = await pool.query<{ tenant_id: string; w: string; since: string }>(OLDEST_DUE_SQL, [opts.windowMs, end]);
    const due = rows[0];
    if (!due) break;
    const start = new Date(Number(due.w) * opts.windowMs);
    const root = await sealWindow(pool, key, due.tenant_id, { start, end: new Date(start.getTime() + opts.windowMs) }, maxLeaves, { from: due.since });
    // Under the sealer's lock a due receipt is always sealable; stop rather than spin if not.
    if (!root) break;
    roots.push(root);
  }
  return roots;
}
