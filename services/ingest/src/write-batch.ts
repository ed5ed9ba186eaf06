import { createHash } from 'node:crypto';
import { hotStatement, type Pool } from '@hookline/db';
import { withTimeout } from './db-timeout';

/** One verified request, ready to be stored. */
export interface PendingEvent {
  eventId: string;
  tenantId: string;
  ingesterId: string;
  type: string | null;
  correlationId: string;
  /** The ingest request's span (not stored): a batch's route job carries its first event's. */
  traceparent?: string;
  /** The provider's delivery id, else the Idempotency-Key header (dedup-key.ts); null when there is neither. */
  dedupKey: string | null;
  /**
   * True when `dedupKey` is the request's own Idempotency-Key header (only when it has no
   * provider delivery id), false when it is a provider's delivery id (or there is none). Only an explicit key is held to its body:
   * reused with a different body it is a conflict; a provider id repeat is always a duplicate.
   */
  explicitKey: boolean;
  sourceIp: string | null;
  receivedAt: Date;
  contentType: string | null;
  headers: Record<string, unknown>;
  query: string | null;
  body: Buffer;
}

/**
 * accepted → 202 (a new event); duplicate → the original 202 (Idempotent-Replayed) with the event first stored for that key;
 * conflict → 409 idempotency-conflict (an explicit Idempotency-Key whose live record holds
 * another body: nothing was stored, the record is untouched); retry → 503 (the key's
 * record vanished between the two statements: nothing was stored).
 */
export type WriteOutcome = { kind: 'accepted'; eventId: string } | { kind: 'duplicate'; eventId: string } | { kind: 'conflict' } | { kind: 'retry' };

/**
 * One statement, so one round trip and atomic without BEGIN/COMMIT: claim each dedup
 * key (or take over a record whose window has passed; a live record is left alone),
 * then insert the events that need no claim or won theirs, with their payloads.
 * Claims go in key order so that two flushes never lock the same keys crosswise.
 */
export const STORE = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[],
      $9::text[], $10::jsonb[], $11::text[], $12::bytea[], $13::text[]) AS u(id, t, i, ty, c, d, ip, r, ct, h, q, b, rh)
  ), claimed AS (
    INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at)
    SELECT 'ingest:' || i, d, t, rh, 202, jsonb_build_object('event_id', id), now() + make_interval(secs => $14)
    FROM input WHERE d IS NOT NULL ORDER BY 'ingest:' || i, d
    ON CONFLICT (scope, key) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, request_hash = EXCLUDED.request_hash,
      status_code = EXCLUDED.status_code, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
    WHERE idempotency_records.expires_at <= now()
    RETURNING scope, key
  ), fresh AS (
    SELECT * FROM input WHERE d IS NULL OR EXISTS (SELECT 1 FROM claimed WHERE claimed.scope = 'ingest:' || input.i AND claimed.key = input.d)
  ), stored AS (
    INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id, dedup_key, source_ip, received_at, validated_at)
    SELECT id, t, i, ty, 'validated', c, d, ip, r, now() FROM fresh RETURNING id
  ), payloads AS (
    INSERT INTO event_payloads (event_id, tenant_id, content_type, headers, query, body) SELECT id, t, ct, h, q, b FROM fresh
  )
  SELECT id FROM stored`;

// Read after the statement above has committed, only when some claims were lost: the
// records that beat them, with the body hash each was stored with.
const ORIGINALS = `SELECT scope, key, response_body->>'event_id' AS event_id, request_hash FROM idempotency_records
  WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`;

const slot = (e: PendingEvent): string => `ingest:${e.ingesterId}\n${e.dedupKey}`;
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/**
 * Stores a batch atomically and returns one outcome per item, in order. Two items of the
 * batch with the same key are one event: the later one answers as a repeat of the first
 * (a duplicate, or a conflict when it has an explicit key and another body).
 *
 * Each keyed item is compared with the record its key holds: the first item's own when it
 * won the claim, else the record that beat it (read by ORIGINALS, the only extra round trip,
 * and only for batches that lost a claim). The record does not say where its key came
 * from; what decides is the item: an explicit Idempotency-Key with a body whose sha256
 * differs from the record's `request_hash` is a conflict, anything else a duplicate.
 */
export async function writeBatch(pool: Pool, items: readonly PendingEvent[], dedupWindowSeconds: number, timeoutMs?: number): Promise<WriteOutcome[]> {
  const hashes = items.map((e) => (e.dedupKey === null ? null : sha256(e.body)));
  const firstOf = new Map<string, number>();
  items.forEach((e, i) => {
    if (e.dedupKey !== null && !firstOf.has(slot(e))) firstOf.set(slot(e), i);
  });
  const firsts = items.flatMap((e, i) => (e.dedupKey === null || firstOf.get(slot(e)) === i ? [i] : []));
  const col = <T>(f: (e: PendingEvent, i: number) => T): T[] => firsts.map((i) => f(items[i]!, i));
  const { rows } = await pool.query<{ id: string }>(withTimeout(hotStatement('ingest_store', STORE, [
    col((e) => e.eventId),
    col((e) => e.tenantId),
    col((e) => e.ingesterId),
    col((e) => e.type),
    col((e) => e.correlationId),
    col((e) => e.dedupKey),
    col((e) => e.sourceIp),
    col((e) => e.receivedAt),
    col((e) => e.contentType),
    col((e) => JSON.stringify(e.headers)),
    col((e) => e.query),
    col((e) => e.body),
    col((_e, i) => hashes[i]),
    dedupWindowSeconds,
  ]), timeoutMs));
  const stored = new Set(rows.map((r) => r.id));
  const lost = firsts.map((i) => items[i]!).filter((e) => !stored.has(e.eventId));
  const original = new Map<string, { eventId: string; requestHash: string }>();
  if (lost.length > 0) {
    const found = await pool.query<{ scope: string; key: string; event_id: string | null; request_hash: string }>(
      withTimeout({ text: ORIGINALS, values: [lost.map((e) => `ingest:${e.ingesterId}`), lost.map((e) => e.dedupKey)] }, timeoutMs),
    );
    for (const r of found.rows) if (r.event_id) original.set(`${r.scope}\n${r.key}`, { eventId: r.event_id, requestHash: r.request_hash });
  }
  return items.map((e, i): WriteOutcome => {
    if (stored.has(e.eventId)) return { kind: 'accepted', eventId: e.eventId };
    if (e.dedupKey === null) return { kind: 'retry' };
    const f = firstOf.get(slot(e))!;
    const first = items[f]!;
    // The record this key now holds: the first item's own (stored by this batch), else the one that beat it.
    const record = stored.has(first.eventId) ? { eventId: first.eventId, requestHash: hashes[f]! } : original.get(slot(e));
    if (!record) return { kind: 'retry' };
    if (e.explicitKey && record.requestHash !== hashes[i]) return { kind: 'conflict' };
    return { kind: 'duplicate', eventId: record.eventId };
  });
}
