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

/**
 * Which receipts an id names. The receipt's own ids (a column of the receipt): oldest first,
 * by started_at, attempt number and id (a delivery's attempts in order). The ids of a
 * resource that many deliveries share: the receipts joined to the table (alias `x`, of tenant
 * $1) that links them to the id $2 by `where`, newest first by that table's time-sortable id
 * (newest event or delivery first; within a delivery, the latest attempt first). The index
 * that finds the resource's events or deliveries can give their order (an incremental sort
 * orders each one's few receipts, and the LIMIT stops the walk), and a page after a cursor
 * starts that index at the cursor's event or delivery (`x.id <=`), so a page of an ingester,
 * destination or flow reads about a page of rows, not all of its receipts nor the tenant's
 * (test/evidence-resource-plans.test.ts).
 */
type Selector =
  | { column: string }
  | { table: 'events' | 'deliveries'; link: 'event_id' | 'delivery_id'; where: (x: string) => string };

// A Map, not an object: `constructor_1` or `__proto__` must not find Object.prototype's members.
const SELECTORS = new Map<string, Selector>([
  ['rcp', { column: 'id' }],
  ['att', { column: 'attempt_id' }],
  ['dlv', { column: 'delivery_id' }],
  ['evt', { column: 'event_id' }],
  ['mrk', { column: 'merkle_root_id' }],
  // The deliveries of the events received on the ingester: its events by their id
  // (events_pkey or events_tenant_id_id_idx, filtered) or, when it has few, by
  // events_ingester_id_id_idx; their receipts by evidence_receipts_event_id_idx.
  ['ing', { table: 'events', link: 'event_id', where: (x) => `${x}.ingester_id = $2` }],
  // The deliveries to the destination: deliveries_destination_id_id_idx (filter and order);
  // their receipts by evidence_receipts_delivery_id_idx.
  ['dst', { table: 'deliveries', link: 'delivery_id', where: (x) => `${x}.destination_id = $2` }],
  // Every delivery the flow made, to whichever destination: a flow may have been pointed at
  // another one (PUT .../delivery-flows/{id}) since, and its deliveries keep their flow_id.
  // deliveries_flow_id_id_idx (filter and order; migration 20261203000000_deliveries_flow_id_index);
  // their receipts by evidence_receipts_delivery_id_idx.
  ['flw', { table: 'deliveries', link: 'delivery_id', where: (x) => `${x}.flow_id = $2` }],
]);

/** The prefixes `evidenceFor` takes. */
export const EVIDENCE_ID_PREFIXES: readonly string[] = [...SELECTORS.keys()];

/** The receipts (alias `r`) of a shared resource's list, joined to the table (alias `x`) that links them to the id $2 of tenant $1. */
function joined(s: Extract<Selector, { table: string }>, r: string, x: string): string {
  return `evidence_receipts ${r} JOIN ${s.table} ${x} ON ${x}.id = ${r}.${s.link} AND ${x}.tenant_id = $1 AND ${s.where(x)}`;
}

/** The statement of `evidenceFor`: $1 tenant, $2 resource id, $3 the receipt to continue after (or null), $4 limit. */
function evidenceStatement(s: Selector): string {
  if ('column' in s) {
    return `SELECT r.* FROM evidence_receipts r
      WHERE r.tenant_id = $1 AND r.${s.column} = $2
        AND ($3::text IS NULL OR (r.started_at, r.attempt_number, r.id) >
             (SELECT c.started_at, c.attempt_number, c.id FROM evidence_receipts c WHERE c.id = $3 AND c.tenant_id = $1 AND c.${s.column} = $2))
      ORDER BY r.started_at, r.attempt_number, r.id LIMIT $4`;
  }
  const keys = [...new Set([s.link, 'delivery_id', 'attempt_number', 'id'])];
  const of = (r: string, x: string): string => joined(s, r, x);
  const row = (r: string): string => keys.map((k) => `${r}.${k}`).join(', ');
  // The cursor's receipt, when it is of this list (else nothing follows it). `x.id <=` repeats
  // the row comparison's first key on the joined table, so its index starts at the cursor.
  return `WITH cur AS (SELECT ${row('c')} FROM ${of('c', 'cx')} WHERE c.id = $3 AND c.tenant_id = $1)
    SELECT r.* FROM ${of('r', 'x')}
     WHERE r.tenant_id = $1
       AND ($3::text IS NULL OR (x.id <= (SELECT ${s.link} FROM cur) AND (${row('r')}) < (SELECT ${keys.join(', ')} FROM cur)))
     ORDER BY ${keys.map((k) => `r.${k} DESC`).join(', ')} LIMIT $4`;
}

/**
 * Evidence by resource id: a receipt (`rcp_`), an attempt (`att_`), a delivery (`dlv_`),
 * an event (`evt_`) or a root (`mrk_`), oldest first; or, newest first, the receipts of the
 * deliveries of the events received on an ingester (`ing_`), of the deliveries to a
 * destination (`dst_`) or of a flow's deliveries (`flw_`) (see SELECTORS for the orders). At
 * most `limit` receipts, after the receipt `afterReceiptId` in that order when one is given
 * (a page). Null when the id names nothing of this tenant that has evidence (or nothing
 * follows that receipt; a receipt not of this list has nothing after it). Receipts are never
 * withdrawn: a DELETED ingester, destination or flow keeps the evidence of its deliveries,
 * as a delivery's id keeps its own once the delivery is purged from the DLQ. The receipts of
 * such a purged delivery are no longer reached by its destination or flow (their link is the
 * delivery row); its event, and so its ingester, still reach them.
 */
export async function evidenceFor(pool: Pool, tenantId: string, resourceId: string, limit = 100, afterReceiptId: string | null = null): Promise<EvidenceBundle[] | null> {
  const selector = SELECTORS.get(resourceId.split('_')[0] ?? '');
  if (!selector) return null;
  const { rows } = await pool.query<ReceiptRow>(evidenceStatement(selector), [tenantId, resourceId, afterReceiptId, limit]);
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

/**
 * Whether the id names anything of this tenant with evidence (the first page of `evidenceFor`
 * is not empty), reading one receipt row and no proofs.
 */
export async function hasEvidence(pool: Pool, tenantId: string, resourceId: string): Promise<boolean> {
  const selector = SELECTORS.get(resourceId.split('_')[0] ?? '');
  if (!selector) return false;
  const { rows } = await pool.query(evidenceStatement(selector), [tenantId, resourceId, null, 1]);
  return rows.length > 0;
}

/**
 * Whether the receipt is in the evidence list of the id (for this tenant): whether a cursor
 * naming it can be one that list issued. One row, by the receipt's primary key.
 */
export async function inEvidenceOf(pool: Pool, tenantId: string, resourceId: string, receiptId: string): Promise<boolean> {
  const s = SELECTORS.get(resourceId.split('_')[0] ?? '');
  if (!s) return false;
  const sql =
    'column' in s
      ? `SELECT 1 FROM evidence_receipts r WHERE r.id = $3 AND r.tenant_id = $1 AND r.${s.column} = $2`
      : `SELECT 1 FROM ${joined(s, 'r', 'x')} WHERE r.id = $3 AND r.tenant_id = $1`;
  const { rows } = await pool.query(sql, [tenantId, resourceId, receiptId]);
  return rows.length > 0;
}
