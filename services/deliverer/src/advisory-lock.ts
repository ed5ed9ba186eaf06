import type { Pool } from '@hookline/db';
import type { PoolClient } from 'pg';

/**
 * Runs `fn` in a transaction holding a transaction-level advisory lock named after the
 * current schema and `name`, so that one replica at a time does the work; the others get
 * null at once instead of waiting.
 */
export async function withTryLock<T>(pool: Pool, name: string, fn: (client: PoolClient) => Promise<T>): Promise<T | null> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ got: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':' || $1)) AS got`, [name]);
    if (!rows[0]?.got) {
      await client.query('ROLLBACK');
      return null;
    }
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
