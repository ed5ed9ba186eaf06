import type { Pool, PoolClient } from 'pg';

/** Runs `fn` inside BEGIN/COMMIT on one pooled client; any throw rolls back and rethrows. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Like withTransaction, but first takes a transaction-level advisory lock named after the
 * current schema and `name`, so one replica at a time does the work; the others get null
 * at once instead of waiting. The lock is released with the transaction.
 */
export async function withTryLock<T>(pool: Pool, name: string, fn: (client: PoolClient) => Promise<T>): Promise<T | null> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ got: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':' || $1)) AS got`, [name]);
    return rows[0]?.got ? fn(client) : null;
  });
}
