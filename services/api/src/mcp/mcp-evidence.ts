import type { Pool } from '@hookline/db';
import { AppError } from '@hookline/errors';
import { evidenceFor, hasEvidence, inEvidenceOf, type EvidenceBundle } from '@hookline/evidence';

export type EvidencePage = {
  receipts: EvidenceBundle[];
  next_cursor: string | null;
  has_more: boolean;
};

/** The cursor is the last receipt id of the previous page (base64url, as the other evidence lists). */
export const encodeCursor = (receiptId: string): string => Buffer.from(receiptId, 'utf8').toString('base64url');
export const decodeCursor = (cursor: string): string => Buffer.from(cursor, 'base64url').toString('utf8');

/**
 * One page of `evidenceFor` (in its order: oldest first, newest first for an ingester,
 * destination or flow); the page after `cursor` when one is given. Null when the id names
 * nothing of this tenant that has evidence (404), whether a cursor is given or not: a cursor
 * never turns another tenant's or an unknown id into an empty page. A cursor naming a receipt
 * that is not in this id's list is refused (400 `cursor`, as one the list did not issue); one
 * of this list with nothing after it is the empty last page. These checks run only when a
 * cursor page comes back empty.
 */
export async function evidencePage(pool: Pool, tenantId: string, resourceId: string, page: { limit?: number; cursor?: string }): Promise<EvidencePage | null> {
  const limit = page.limit ?? 20;
  const after = page.cursor ? decodeCursor(page.cursor) : null;
  const bundles = await evidenceFor(pool, tenantId, resourceId, limit + 1, after);
  if (!bundles && after) {
    if (!(await hasEvidence(pool, tenantId, resourceId))) return null;
    if (!(await inEvidenceOf(pool, tenantId, resourceId, after))) throw AppError.validation([{ field: 'cursor', message: 'is not a next_cursor of this list' }]);
  }
  if (!bundles && !after) return null;
  const shown = (bundles ?? []).slice(0, limit);
  const last = shown[shown.length - 1];
  const next = (bundles?.length ?? 0) > limit && last ? encodeCursor(last.receipt.id) : null;
  return { receipts: shown, next_cursor: next, has_more: next !== null };
}
