import { newId, type Pool } from '@hookline/db';
import type { Logger } from '@hookline/logger';
import { withTimeout } from './db-timeout';

export interface Rejection {
  tenantId: string;
  ingesterId: string;
  /** SPEC reason code: provider_verification_failed, forbidden, validation_error. */
  reasonCode: string;
  detail: string;
  sourceIp: string | null;
}

/** Keeps a refused request visible through the API. A failure here never changes the answer. */
export async function recordRejection(pool: Pool, logger: Logger, r: Rejection, timeoutMs?: number): Promise<void> {
  const text = 'INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code, detail, source_ip) VALUES ($1, $2, $3, $4, $5, $6)';
  await pool
    .query(withTimeout({ text, values: [newId('rej'), r.tenantId, r.ingesterId, r.reasonCode, r.detail, r.sourceIp] }, timeoutMs))
    .catch((err: Error) => logger.warn('rejection not recorded', { ingester_id: r.ingesterId, reason_code: r.reasonCode, error: err.message }));
}
