import { createHash } from 'node:crypto';
import { withTransaction, type Pool } from '@hookline/db';

/** One verified request, ready to be stored. */
export interface PendingEvent {
  eventId: string;
  tenantId: string;
  ingesterId: string;
  type: string | null;
  correlationId: string;
  /** Idempotency-Key, else the provider's delivery id; null when there is none. */
  dedupKey: string | null;
  sourceIp: string | null;
  receivedAt: Date;
  contentType: string | null;
  headers: Record<string, unknown>;
  query: string | null;
  body: Buffer;
}

/** accepted → 202 (a new event); duplicate → 200 with the event first stored for that key. */
export type WriteOutcome = { kind: 'accepted'; eventId: string } | { kind: 'duplicate'; eventId: string };

// Claims each key, or takes over a record whose window has passed; a live record is
// left alone (and locked until COMMIT) and is then read back as a duplicate.
const CLAIM = `INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at)
  SELECT s, k, t, h, 202, jsonb_build_object('event_id', e), now() + make_interval(secs => $6)
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(s, k, t, h, e)
  ON CONFLICT (scope, key) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, request_hash = EXCLUDED.request_hash,
    status_code = EXCLUDED.status_code, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
  WHERE idempotency_records.expires_at <= now()
  RETURNING scope, key`;

const ORIGINALS = `SELECT scope, key, response_body->>'event_id' AS event_id FROM idempotency_records
  WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`;

const INSERT_EVENTS = `INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id, dedup_key, source_ip, received_at, validated_at)
  SELECT id, t, i, ty, 'validated', c, d, ip, r, now()
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]) AS u(id, t, i, ty, c, d, ip, r)`;

const INSERT_PAYLOADS = `INSERT INTO event_payloads (event_id, tenant_id, content_type, headers, query, body)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::bytea[])`;

const scopeOf = (e: PendingEvent): string => `ingest:${e.ingesterId}`;
const slot = (scope: string, key: string): string => `${scope}\n${key}`;

/**
 * Stores a batch in one transaction: dedup claims, then every new event and payload
 * with one multi-row INSERT each. Returns one outcome per item, in order. Two items of
 * the batch with the same key are one event: the second is a duplicate of the first.
 */
export async function writeBatch(pool: Pool, items: readonly PendingEvent[], dedupWindowSeconds: number): Promise<WriteOutcome[]> {
  const firstOf = new Map<string, number>();
  items.forEach((e, i) => {
    if (e.dedupKey !== null && !firstOf.has(slot(scopeOf(e), e.dedupKey))) firstOf.set(slot(scopeOf(e), e.dedupKey), i);
  });
  // Sorted so that two flushes claiming overlapping keys lock them in the same order.
  const claims = [...firstOf.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, i]) => items[i]!);
  const original = new Map<string, string>();
  await withTransaction(pool, async (client) => {
    if (claims.length > 0) {
      const claimed = await client.query<{ scope: string; key: string }>(CLAIM, [
        claims.map(scopeOf),
        claims.map((e) => e.dedupKey),
        claims.map((e) => e.tenantId),
        claims.map((e) => createHash('sha256').update(e.body).digest('hex')),
        claims.map((e) => e.eventId),
        dedupWindowSeconds,
      ]);
      const won = new Set(claimed.rows.map((r) => slot(r.scope, r.key)));
      const lost = claims.filter((e) => !won.has(slot(scopeOf(e), e.dedupKey!)));
      if (lost.length > 0) {
        const { rows } = await client.query<{ scope: string; key: string; event_id: string | null }>(ORIGINALS, [lost.map(scopeOf), lost.map((e) => e.dedupKey)]);
        for (const r of rows) if (r.event_id) original.set(slot(r.scope, r.key), r.event_id);
      }
    }
    const fresh = items.filter((e, i) => e.dedupKey === null || (firstOf.get(slot(scopeOf(e), e.dedupKey)) === i && !original.has(slot(scopeOf(e), e.dedupKey))));
    if (fresh.length === 0) return;
    const col = <T>(f: (e: PendingEvent) => T): T[] => fresh.map(f);
    await client.query(INSERT_EVENTS, [col((e) => e.eventId), col((e) => e.tenantId), col((e) => e.ingesterId), col((e) => e.type), col((e) => e.correlationId), col((e) => e.dedupKey), col((e) => e.sourceIp), col((e) => e.receivedAt)]);
    await client.query(INSERT_PAYLOADS, [col((e) => e.eventId), col((e) => e.tenantId), col((e) => e.contentType), col((e) => JSON.stringify(e.headers)), col((e) => e.query), col((e) => e.body)]);
  });
  return items.map((e, i): WriteOutcome => {
    if (e.dedupKey === null) return { kind: 'accepted', eventId: e.eventId };
    const key = slot(scopeOf(e), e.dedupKey);
    const earlier = original.get(key);
    if (earlier) return { kind: 'duplicate', eventId: earlier };
    const first = firstOf.get(key)!;
    return first === i ? { kind: 'accepted', eventId: e.eventId } : { kind: 'duplicate', eventId: items[first]!.eventId };
  });
}
