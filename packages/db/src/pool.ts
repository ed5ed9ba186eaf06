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

/**
 * Session settings for every connection: the schema, and JIT off. Hookline's statements
 * are short key lookups and multi-row writes; when statistics lag a fast-growing table the
 * planner's cost estimate can pass `jit_above_cost` and PostgreSQL then spends 100–350 ms
 * compiling a statement that runs in a few (seen in the benchmark with auto_explain).
 */
export function sessionOptions(schema: string): string {
  return `-c search_path="${schema}" -c jit=off`;
}

/** A raw `pg` pool for hot paths (multi-row statements); Prisma serves the control plane. */
export function createPool(url: string, max = 10): Pool {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const pool = new Pool({ connectionString, max, options: sessionOptions(schema), connectionTimeoutMillis: 5000 });
  // A client that loses its connection must not crash the process: an idle one reports to
  // the pool, and a checked-out one (PostgreSQL restarted mid-transaction) emits 'error'
  // after its query was already rejected, with no listener while it is checked out. The
  // pool drops such a client when it is released.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
