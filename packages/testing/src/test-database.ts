import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate, createPool, type Pool } from '@hookline/db';

export interface TestDatabase {
  url: string;
  schema: string;
  pool: Pool;
  drop(): Promise<void>;
}

const BASE = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/** A fresh schema with all migrations applied, private to one test file. */
export async function createTestDatabase(label = 't'): Promise<TestDatabase> {
  const schema = `hl_${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20)}_${randomBytes(4).toString('hex')}`;
  const u = new URL(BASE);
  u.searchParams.set('schema', schema);
  const url = u.toString();
  await migrate(url);
  const pool = createPool(url, 5);
  return {
    url,
    schema,
    pool,
    async drop() {
      await pool.end();
      const c = new Client({ connectionString: BASE });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    },
  };
}
