import type { Pool } from '@hookline/db';
import { bundlesFor } from './inclusion-proof';
import type { EvidenceBundle, MerkleRootRecord } from './receipt';
import { rootOf, type ReceiptRow, type RootRow } from './rows';

export interface Page {
  limit?: number;
  /** Opaque: the `next_cursor` of the previous page. */
  cursor?: string | null;
}

function bounds(p: Page): { limit: number; before: string | null } {
  const limit = Math.min(Math.max(Math.trunc(p.limit ?? 20), 1), 100);
  const before = p.cursor ? Buffer.from(p.cursor, 'base64url').toString('utf8') : null;
  return { limit, before };
}

function nextCursor<T extends { id: string }>(items: T[], limit: number): string | null {
  const last = items[limit - 1];
  return items.length > limit && last ? Buffer.from(last.id, 'utf8').toString('base64url') : null;
}

/** A tenant's sealed roots, newest first. */
export async function listMerkleRoots(pool: Pool, tenantId: string, page: Page = {}): Promise<{ merkle_roots: MerkleRootRecord[]; next_cursor: string | null }> {
  const b = bounds(page);
  const { rows } = await pool.query<RootRow>(
    'SELECT * FROM merkle_roots WHERE tenant_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3',
    [tenantId, b.before, b.limit + 1],
  );
  return { merkle_roots: rows.slice(0, b.limit).map(rootOf), next_cursor: nextCursor(rows, b.limit) };
}

export interface ReceiptFilter extends Page {
  delivery_id?: string;
  event_id?: string;
  root_id?: string;
}

/** A tenant's receipts, newest first, each with its inclusion proof once sealed. */
export async function listReceipts(pool: Pool, tenantId: string, f: ReceiptFilter = {}): Promise<{ receipts: EvidenceBundle[]; next_cursor: string | null }> {
  const b = bounds(f);
  const { rows } = await pool.query<ReceiptRow>(
    `SELECT * FROM evidence_receipts
      WHERE tenant_id = $1 AND ($2::text IS NULL OR id < $2) AND ($3::text IS NULL OR delivery_id = $3)
        AND ($4::text IS NULL OR event_id = $4) AND ($5::text IS NULL OR merkle_root_id = $5)
      ORDER BY id DESC LIMIT $6`,
    [tenantId, b.before, f.delivery_id ?? null, f.event_id ?? null, f.root_id ?? null, b.limit + 1],
  );
  return { receipts: await bundlesFor(pool, rows.slice(0, b.limit)), next_cursor: nextCursor(rows, b.limit) };
}

const COLUMN_BY_PREFIX: Record<string, string> = { rcp: 'id', att: 'attempt_id', dlv: 'delivery_id', evt: 'event_id', mrk: 'merkle_root_id' };

/**
 * Evidence by resource id: a receipt (`rcp_`), an attempt (`att_`), a delivery (`dlv_`),
 * an event (`evt_`) or a root (`mrk_`). At most `limit` receipts, oldest first (started_at,
 * attempt number, id), after the receipt `afterReceiptId` when one is given (a page). Null
 * when the id names nothing of this tenant that has evidence (or nothing follows that
 * receipt; a receipt not of this list has nothing after it).
 */
export async function evidenceFor(pool: Pool, tenantId: string, resourceId: string, limit = 100, afterReceiptId: string | null = null): Promise<EvidenceBundle[] | null> {
  const column = COLUMN_BY_PREFIX[resourceId.split('_')[0] ?? ''];
  if (!column) return null;
  const { rows } = await pool.query<ReceiptRow>(
    `SELECT r.* FROM evidence_receipts r
      WHERE r.tenant_id = $1 AND r.${column} = $2
        AND ($3::text IS NULL OR (r.started_at, r.attempt_number, r.id) >
             (SELECT c.started_at, c.attempt_number, c.id FROM evidence_receipts c WHERE c.id = $3 AND c.tenant_id = $1 AND c.${column} = $2))
      ORDER BY r.started_at, r.attempt_number, r.id LIMIT $4`,
    [tenantId, resourceId, afterReceiptId, limit],
  );
  return rows.length ? bundlesFor(pool, rows) : null;
}

/**
 * The bundles of many deliveries at once (attempt 1 first), for a page of deliveries. Not by
 * receipt id: receipts issued in one pass share a millisecond, so their ids do not sort.
 */
export async function receiptsByDelivery(pool: Pool, tenantId: string, deliveryIds: readonly string[]): Promise<Map<string, EvidenceBundle[]>> {
  const out = new Map<string, EvidenceBundle[]>(deliveryIds.map((id) => [id, []]));
  if (!deliveryIds.length) return out;
  const { rows } = await pool.query<ReceiptRow>('SELECT * FROM evidence_receipts WHERE tenant_id = $1 AND delivery_id = ANY($2::text[]) ORDER BY attempt_number, id', [tenantId, deliveryIds]);
  for (const b of await bundlesFor(pool, rows)) out.get(b.receipt.delivery_id)?.push(b);
  return out;
}
