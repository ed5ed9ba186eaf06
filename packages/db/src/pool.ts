import { Pool } from 'pg';

export type { Pool };

/**
 * Splits a Prisma-style URL: `?schema=name` is not a libpq parameter, so it is taken out
 * and applied as the search_path of every connection instead.
 */
export function parseDatabaseUrl(url: string): { connectionString: string; schema: string } {
  const u = new URL(url);
  const schema = u.searchParams.get('schema') ?? 'public';
  u.searchParams.delete('schema');
  return { connectionString: u.toString(), schema };
}

/** A raw `pg` pool for hot paths (multi-row statements); Prisma serves the control plane. */
export function createPool(url: string, max = 10): Pool {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const pool = new Pool({ connectionString, max, options: `-c search_path="${schema}"`, connectionTimeoutMillis: 5000 });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}
