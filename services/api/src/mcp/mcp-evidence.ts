import type { Pool } from '@hookline/db';
import { bundlesFor, type EvidenceBundle } from '@hookline/evidence';

type ReceiptRow = Parameters<typeof bundlesFor>[1][number];

const COLUMN_BY_PREFIX: Record<string, string> = { rcp: 'id', att: 'attempt_id', dlv: 'delivery_id', evt: 'event_id', mrk: 'merkle_root_id' };

export type EvidencePage = {
  receipts: EvidenceBundle[];
  next_cursor: string | null;
  has_more: boolean;
};

/** The cursor is the last receipt id of the previous page (base64url, as the other evidence lists). */
export const encodeCursor = (receiptId: string): string => Buffer.from(receiptId, 'utf8').toString('base64url');
export const decodeCursor = (cursor: string): string => Buffer.from(cursor, 'base64url').toString('utf8');

/**
 * One page of the evidence of a receipt, attempt, delivery, event or root id, oldest first
 * (started_at, attempt number, id), as `evidenceFor` orders it; the page after `cursor` when
 * one is given. Null when the id names nothing of this tenant that has evidence (first page).
 */
export async function evidencePage(pool: Pool, tenantId: string, resourceId: string, page: { limit?: number; cursor?: string }): Promise<EvidencePage | null> {
  const column = COLUMN_BY_PREFIX[resourceId.split('_')[0] ?? ''];
  if (!column) return null;
  const limit = page.limit ?? 20;
  const after = page.cursor ? decodeCursor(page.cursor) : null;
  // A cursor that is not a receipt of this list finds no row to follow: an empty page.
  const { rows } = await pool.query<ReceiptRow>(
    `SELECT r.* FROM evidence_receipts r
      WHERE r.tenant_id = $1 AND r.${column} = $2
        AND ($3::text IS NULL OR (r.started_at, r.attempt_number, r.id) >
             (SELECT c.started_at, c.attempt_number, c.id FROM evidence_receipts c WHERE c.id = $3 AND c.tenant_id = $1 AND c.${column} = $2))
      ORDER BY r.started_at, r.attempt_number, r.id LIMIT $4`,
    [tenantId, resourceId, after, limit + 1],
  );
  if (!rows.length && !after) return null;
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const next = rows.length > limit && last ? encodeCursor(last.id) : null;
  return { receipts: await bundlesFor(pool, shown), next_cursor: next, has_more: next !== null };
}
