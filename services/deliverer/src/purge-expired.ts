import { idFloor, type Pool } from '@hookline/db';

// Rows nothing reads any more, deleted in batches by the deliverer's janitor (main.ts):
// - idempotency records past their expiry (ingest's dedup keys, one per keyed event, and
//   the api's Idempotency-Keys): an expired record is only ever taken over by the next use
//   of its key (INSERT … ON CONFLICT … WHERE expires_at < now()), so without this the table
//   kept one row per keyed event for ever. A grace of an hour past expiry leaves alone any
//   record a writer may be about to take over; a delete racing such an INSERT makes it a
//   plain insert (PostgreSQL re-checks the conflict once the delete commits).
// - ingest rejections older than the retention (INGEST_REJECTION_RETENTION_MS): ids are
//   time-ordered, so the oldest are a range of the primary key.
// Audit log entries are kept: how long is the operator's policy (docs/deployment.md).

export const EXPIRED_GRACE = `interval '1 hour'`;

export const PURGE_IDEMPOTENCY_SQL = `
DELETE FROM idempotency_records r
 WHERE (r.scope, r.key) IN (
   SELECT scope, key FROM idempotency_records
    WHERE expires_at < now() - ${EXPIRED_GRACE}
    ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
   AND r.expires_at < now() - ${EXPIRED_GRACE}`;

export const PURGE_REJECTIONS_SQL = `
DELETE FROM ingest_rejections
 WHERE id IN (SELECT id FROM ingest_rejections WHERE id < $1 ORDER BY id LIMIT $2)`;

export interface PurgeExpiredOptions {
  /** Ingest rejections older than this are deleted. */
  rejectionRetentionMs: number;
  /** Rows per statement. */
  batch?: number;
  /** Statements per kind and run at most (the rest waits for the next run). */
  maxBatches?: number;
  now?: number;
}

/** One run: how many rows of each kind were deleted. */
export async function purgeExpired(pool: Pick<Pool, 'query'>, o: PurgeExpiredOptions): Promise<{ idempotency_records: number; ingest_rejections: number }> {
  const batch = o.batch ?? 5_000;
  const maxBatches = o.maxBatches ?? 20;
  // Every rejection id minted before the cut-off sorts below `rej_<its time part>`.
  // A retention longer than the epoch keeps everything (idFloor of a time before it is below every id).
  const cutoff = idFloor('rej', (o.now ?? Date.now()) - o.rejectionRetentionMs);
  const run = async (sql: string, params: unknown[]): Promise<number> => {
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = (await pool.query(sql, params)).rowCount ?? 0;
      total += n;
      if (n < batch) break;
    }
    return total;
  };
  return {
    idempotency_records: await run(PURGE_IDEMPOTENCY_SQL, [batch]),
    ingest_rejections: await run(PURGE_REJECTIONS_SQL, [cutoff, batch]),
  };
}
