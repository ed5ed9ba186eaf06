import { idTime, newId, type Pool } from '@hookline/db';
import { signRecord } from './canonical';
import type { EvidenceKey } from './evidence-key';
import { originOf, receiptLeafHash, type Receipt } from './receipt';

interface AttemptRow {
  id: string;
  tenant_id: string;
  delivery_id: string;
  number: number;
  status_code: number | null;
  error_kind: string | null;
  started_at: Date;
  duration_ms: number;
  event_id: string;
  destination_id: string;
  url: string | null;
  body_sha256: string | null;
  response_sha256: string | null;
}

// A page of attempt ids in id order (the primary key), then the details of those that
// have no receipt yet. Two statements rather than one anti-join over the range: with
// statistics that lag a fast-growing table the planner hashed the whole range of
// attempts against every receipt (~100 ms per 1,000 attempts in the benchmark); this way
// each step is an index walk or an index probe per id, whatever the statistics say.
const PAGE = `SELECT id FROM delivery_attempts WHERE id > $1 ORDER BY id LIMIT $2`;

// Hashes are computed inside PostgreSQL so that no body travels to this process. The
// response body is stored truncated by the deliverer: its hash is of the stored text.
const PENDING_ATTEMPTS = `
SELECT a.id, a.tenant_id, a.delivery_id, a.number, a.status_code, a.error_kind, a.started_at, a.duration_ms,
       d.event_id, d.destination_id, t.url,
       encode(sha256(p.body), 'hex') AS body_sha256,
       encode(sha256(convert_to(a.response_body, 'UTF8')), 'hex') AS response_sha256
  FROM unnest($1::text[]) AS x(id)
  CROSS JOIN LATERAL (
    SELECT a.* FROM delivery_attempts a
     WHERE a.id = x.id AND NOT EXISTS (SELECT 1 FROM evidence_receipts r WHERE r.attempt_id = a.id)
  ) a
  JOIN deliveries d ON d.id = a.delivery_id
  LEFT JOIN destinations t ON t.id = d.destination_id
  LEFT JOIN event_payloads p ON p.event_id = d.event_id
 ORDER BY a.id`;

const INSERT = `
INSERT INTO evidence_receipts (id, tenant_id, attempt_id, delivery_id, event_id, destination_id, destination_origin, attempt_number,
  outcome, status_code, error_kind, started_at, completed_at, duration_ms, request_body_sha256, response_body_sha256,
  key_id, signature, leaf_hash, issued_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[],
  $9::text[], $10::int[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::int[], $15::text[], $16::text[],
  $17::text[], $18::text[], $19::text[], $20::timestamptz[])
ON CONFLICT (attempt_id) DO NOTHING`;

/** The smallest id of the time-sortable id scheme created at `at` (see @hookline/db ids). */
export function idFloor(prefix: string, at: Date): string {
  return `${prefix}_${idTime(at.getTime())}`;
}

function toReceipt(key: EvidenceKey, a: AttemptRow, issuedAt: Date): Receipt {
  const unsigned: Receipt = {
    v: 1,
    id: newId('rcp'),
    tenant_id: a.tenant_id,
    attempt_id: a.id,
    delivery_id: a.delivery_id,
    event_id: a.event_id,
    destination_id: a.destination_id,
    destination_origin: originOf(a.url),
    attempt_number: a.number,
    outcome: a.status_code !== null && a.status_code >= 200 && a.status_code < 300 ? 'succeeded' : 'failed',
    status_code: a.status_code,
    error_kind: a.error_kind,
    started_at: a.started_at.toISOString(),
    completed_at: new Date(a.started_at.getTime() + a.duration_ms).toISOString(),
    duration_ms: a.duration_ms,
    request_body_sha256: a.body_sha256,
    response_body_sha256: a.response_sha256,
    issued_at: issuedAt.toISOString(),
    key_id: key.id,
    signature: '',
  };
  return { ...unsigned, signature: signRecord(key.key, unsigned) };
}

async function insertReceipts(pool: Pool, receipts: Receipt[]): Promise<number> {
  const col = <K extends keyof Receipt>(k: K): Receipt[K][] => receipts.map((r) => r[k]);
  const res = await pool.query(INSERT, [
    col('id'), col('tenant_id'), col('attempt_id'), col('delivery_id'), col('event_id'), col('destination_id'), col('destination_origin'),
    col('attempt_number'), col('outcome'), col('status_code'), col('error_kind'), col('started_at'), col('completed_at'), col('duration_ms'),
    col('request_body_sha256'), col('response_body_sha256'), col('key_id'), col('signature'),
    receipts.map((r) => receiptLeafHash(r).toString('hex')), col('issued_at'),
  ]);
  return res.rowCount ?? 0;
}

export interface IssueOptions {
  /** Only attempts whose (time-sortable) id is not older than this; omit for a full scan. */
  since?: Date;
  /** Attempts per statement. */
  batchSize?: number;
  /** The issue time written into the receipts (tests pin it); else `clock`, read per batch. */
  now?: Date;
  /**
   * The clock that stamps each batch, read once the batch's attempts have been read (so no
   * receipt is stamped before its attempt); default the system clock.
   */
  clock?: () => Date;
  /**
   * Attempt ids that an earlier pass covered: each has its receipt, so they are not looked
   * up again. Passes overlap (each looks back past the previous one), and without this every
   * attempt was probed three to four times.
   */
  covered?: ReadonlySet<string>;
  /** Called with each page of attempt ids once every one of them has its receipt. */
  onCovered?: (ids: string[]) => void;
}

/**
 * Turns delivery attempts that have no receipt yet into signed receipts, a batch of rows
 * per statement. Idempotent: a receipt is unique per attempt. Returns how many were issued.
 */
export async function issueReceipts(pool: Pool, key: EvidenceKey, opts: IssueOptions = {}): Promise<number> {
  const batchSize = opts.batchSize ?? 1000;
  let after = opts.since ? idFloor('att', opts.since) : '';
  let issued = 0;
  for (;;) {
    const { rows: page } = await pool.query<{ id: string }>(PAGE, [after, batchSize]);
    if (!page.length) return issued;
    const ids = page.map((r) => r.id);
    const fresh = opts.covered ? ids.filter((id) => !opts.covered!.has(id)) : ids;
    if (fresh.length) {
      const { rows } = await pool.query<AttemptRow>(PENDING_ATTEMPTS, [fresh]);
      if (rows.length) {
        const issuedAt = opts.now ?? (opts.clock ? opts.clock() : new Date());
        issued += await insertReceipts(pool, rows.map((a) => toReceipt(key, a, issuedAt)));
      }
    }
    opts.onCovered?.(ids);
    after = ids[ids.length - 1]!;
    if (page.length < batchSize) return issued;
  }
}
