import type { Pool } from '@hookline/db';
import { withTimeout } from './db-timeout';

/**
 * The second key of a signed generic request: its Idempotency-Key (dedup-key.ts `retryKey`),
 * in the same `idempotency_records` rows as every other key. The signed id is claimed by the
 * batch's one statement (write-batch.ts); this key is looked up before it and recorded after
 * the event is stored. Two retries under one key that race each other may both become events
 * (at-least-once); a replay of one signed request never can, whatever key it carries.
 */
const FIND = `SELECT response_body->>'event_id' AS event_id, request_hash FROM idempotency_records
  WHERE scope = $1 AND key = $2 AND expires_at > now()`;

// As write-batch.ts claims a key: a live record is left alone, an expired one taken over.
const HOLD = `INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at)
  VALUES ($1, $2, $3, $4, 202, jsonb_build_object('event_id', $5::text), now() + make_interval(secs => $6))
  ON CONFLICT (scope, key) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, request_hash = EXCLUDED.request_hash,
    status_code = EXCLUDED.status_code, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
  WHERE idempotency_records.expires_at <= now()`;

/** The live record of `key` on the ingester: the event it answered and the sha256 of its body; null when there is none. */
export async function findKey(pool: Pool, ingesterId: string, key: string, timeoutMs?: number): Promise<{ eventId: string; requestHash: string } | null> {
  const { rows } = await pool.query<{ event_id: string | null; request_hash: string }>(withTimeout({ text: FIND, values: [`ingest:${ingesterId}`, key] }, timeoutMs));
  const row = rows[0];
  return row?.event_id ? { eventId: row.event_id, requestHash: row.request_hash } : null;
}

/** Records `key` for a stored event, for `windowSeconds`, unless a live record holds it already. */
export async function holdKey(
  pool: Pool,
  rec: { tenantId: string; ingesterId: string; key: string; requestHash: string; eventId: string },
  windowSeconds: number,
  timeoutMs?: number,
): Promise<void> {
  await pool.query(withTimeout({ text: HOLD, values: [`ingest:${rec.ingesterId}`, rec.key, rec.tenantId, rec.requestHash, rec.eventId, windowSeconds] }, timeoutMs));
}
