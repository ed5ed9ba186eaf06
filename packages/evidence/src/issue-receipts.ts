import { idFloor, newId, type Pool } from '@hookline/db';
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

// The backstop's step (issueMissingReceipts): the next $2 attempt ids after $1 in id order
// (the primary key, index only), and those of them that have no receipt. The receipts are
// bounded to the same range of attempt ids on their unique index, so that however the
// planner joins them (a probe per id, or a merge or hash of both ranges) it reads about
// 2 × $2 index entries, whatever the tables' sizes or statistics.
export const MISSING_SQL = `
WITH range AS MATERIALIZED (SELECT id FROM delivery_attempts WHERE id > $1 ORDER BY id LIMIT $2),
     bounds AS (SELECT max(id) AS last, count(*)::int AS n FROM range)
SELECT b.last, b.n, ARRAY(
  SELECT a.id FROM range a
   WHERE NOT EXISTS (SELECT 1 FROM evidence_receipts r WHERE r.attempt_id = a.id AND r.attempt_id > $1 AND r.attempt_id <= b.last)
   ORDER BY a.id) AS missing
  FROM bounds b`;

const INSERT = `
INSERT INTO evidence_receipts (id, tenant_id, attempt_id, delivery_id, event_id, destination_id, destination_origin, attempt_number,
  outcome, status_code, error_kind, started_at, completed_at, duration_ms, request_body_sha256, response_body_sha256,
  key_id, signature, leaf_hash, issued_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[],
  $9::text[], $10::int[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::int[], $15::text[], $16::text[],
  $17::text[], $18::text[], $19::text[], $20::timestamptz[])
ON CONFLICT (attempt_id) DO NOTHING`;

// The instants a receipt can state: RFC 3339 has four-digit years only (toISOString writes
// `+010000-…` past 9999, which PostgreSQL refuses), and PostgreSQL has no year 0.
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The attempt's start and end as a receipt states them, or null when either is outside
 * FIRST_INSTANT..LAST_INSTANT (an attempt an agent reported with a time far off, before the
 * api checked report times; PostgreSQL's own range, or ±infinity, goes beyond JavaScript's).
 */
function receiptTimes(a: AttemptRow): { startedAt: string; completedAt: string } | null {
  const start = a.started_at instanceof Date ? a.started_at.getTime() : NaN;
  const end = start + a.duration_ms;
  if (!(start >= FIRST_INSTANT && start <= LAST_INSTANT && end >= FIRST_INSTANT && end <= LAST_INSTANT)) return null;
  return { startedAt: new Date(start).toISOString(), completedAt: new Date(end).toISOString() };
}

function toReceipt(key: EvidenceKey, a: AttemptRow, times: { startedAt: string; completedAt: string }, issuedAt: Date): Receipt {
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
    started_at: times.startedAt,
    completed_at: times.completedAt,
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
  /**
   * Called with each page of attempt ids once every one of them has its receipt, or was
   * skipped (onSkipped): a later pass that is not a full scan does not look them up again.
   */
  onCovered?: (ids: string[]) => void;
  /**
   * Called for an attempt that gets no receipt because its times cannot be stated in one (a
   * start or end outside years 1-9999, written before the api refused such reports): it is
   * skipped, and every other attempt of its batch still gets its receipt. A full scan (the
   * sealer's first pass, its sweeps, each round of its backstop) meets it again.
   */
  onSkipped?: (attempt: SkippedAttempt) => void;
}

/** An attempt left without a receipt (see IssueOptions.onSkipped). */
export interface SkippedAttempt {
  attempt_id: string;
  tenant_id: string;
  delivery_id: string;
  /** As stored, or null when it is not a date JavaScript can hold. */
  started_at: string | null;
  duration_ms: number;
}

const storedTime = (v: unknown): string | null => (v instanceof Date && !Number.isNaN(v.getTime()) ? v.toISOString() : null);

/** Issues the receipts of those of `ids` (one batch) that have none yet; how many were issued. */
async function issueFor(pool: Pool, key: EvidenceKey, ids: string[], opts: Pick<IssueOptions, 'now' | 'clock' | 'onSkipped'>): Promise<number> {
  const { rows } = await pool.query<AttemptRow>(PENDING_ATTEMPTS, [ids]);
  if (!rows.length) return 0;
  const issuedAt = opts.now ?? (opts.clock ? opts.clock() : new Date());
  const receipts: Receipt[] = [];
  for (const a of rows) {
    const times = receiptTimes(a);
    if (times) receipts.push(toReceipt(key, a, times, issuedAt));
    else opts.onSkipped?.({ attempt_id: a.id, tenant_id: a.tenant_id, delivery_id: a.delivery_id, started_at: storedTime(a.started_at), duration_ms: a.duration_ms });
  }
  return receipts.length ? insertReceipts(pool, receipts) : 0;
}

/**
 * Turns delivery attempts that have no receipt yet into signed receipts, a batch of rows
 * per statement. Idempotent: a receipt is unique per attempt. Returns how many were issued.
 * An attempt whose times a receipt cannot state is skipped (onSkipped), never fails the
 * batch: one such row would otherwise stop receipts and sealing for every tenant.
 */
export async function issueReceipts(pool: Pool, key: EvidenceKey, opts: IssueOptions = {}): Promise<number> {
  const batchSize = opts.batchSize ?? 1000;
  let after = opts.since ? idFloor('att', opts.since.getTime()) : '';
  let issued = 0;
  for (;;) {
    const { rows: page } = await pool.query<{ id: string }>(PAGE, [after, batchSize]);
    if (!page.length) return issued;
    const ids = page.map((r) => r.id);
    const fresh = opts.covered ? ids.filter((id) => !opts.covered!.has(id)) : ids;
    if (fresh.length) issued += await issueFor(pool, key, fresh, opts);
    opts.onCovered?.(ids);
    after = ids[ids.length - 1]!;
    if (page.length < batchSize) return issued;
  }
}

export interface BackstopStep {
  /** Receipts issued. */
  issued: number;
  /** Attempts of the step's range that had no receipt when it was read (issued, skipped, or issued meanwhile by another writer). */
  missing: number;
  /** The oldest of those attempt ids, or null. */
  oldestMissing: string | null;
  /** Where the next step starts: the last attempt id read, or '' when the step reached the newest attempt (the next step starts over). */
  next: string;
}

/**
 * One step of the backstop over every attempt, whatever its id's time: reads the next `limit`
 * attempt ids after `after` ('' = the first) in id order and issues the receipts of those
 * that have none (see MISSING_SQL for the cost: about 2 × `limit` index entries, plus the
 * missing attempts' rows). The sealer's regular passes read attempt ids from a cut-off on its
 * own clock, and an attempt id is minted on the deliverer's: one whose id is older than that
 * cut-off when it commits is found here. An attempt whose times a receipt cannot state is
 * skipped (onSkipped), as in issueReceipts.
 */
export async function issueMissingReceipts(
  pool: Pool,
  key: EvidenceKey,
  opts: { after: string; limit: number; batchSize?: number } & Pick<IssueOptions, 'now' | 'clock' | 'onSkipped'>,
): Promise<BackstopStep> {
  const { rows } = await pool.query<{ last: string | null; n: number; missing: string[] }>(MISSING_SQL, [opts.after, opts.limit]);
  const { last, n, missing } = rows[0] ?? { last: null, n: 0, missing: [] };
  const batchSize = opts.batchSize ?? 1000;
  let issued = 0;
  for (let i = 0; i < missing.length; i += batchSize) issued += await issueFor(pool, key, missing.slice(i, i + batchSize), opts);
  return { issued, missing: missing.length, oldestMissing: missing[0] ?? null, next: n >= opts.limit && last ? last : '' };
}
