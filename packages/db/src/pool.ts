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
 * Planner settings of the pipeline's connections (ingest, router, deliverer): index plans
 * only. Their statements look rows up by key, a batch of keys at a time, and their
 * hottest ones are named prepared statements (`hotStatement`) whose plan PostgreSQL
 * caches per connection. A cached (generic) plan is made once, from the statistics of
 * that moment: on tables that start empty it chose sequential scans and hash joins, which
 * grow with the table while the plan stays. With these off, every plan of these
 * connections is index lookups and nested loops, right for a batch of keys whatever the
 * table's size. (A statement with no index to use still gets its sequential scan.)
 */
export const INDEX_PLAN_SETTINGS = ['enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off'] as const;

export interface PoolOptions {
  /** The pipeline's planner settings (INDEX_PLAN_SETTINGS); the api's pool plans freely. */
  indexPlans?: boolean;
}

/**
 * Session settings for every connection: the schema, and JIT off. Hookline's statements
 * are short key lookups and multi-row writes; when statistics lag a fast-growing table the
 * planner's cost estimate can pass `jit_above_cost` and PostgreSQL then spends 100–350 ms
 * compiling a statement that runs in a few (seen in the benchmark with auto_explain).
 */
export function sessionOptions(schema: string, opts: PoolOptions = {}): string {
  const settings = ['jit=off', ...(opts.indexPlans ? INDEX_PLAN_SETTINGS : [])];
  return [`-c search_path="${schema}"`, ...settings.map((s) => `-c ${s}`)].join(' ');
}

/**
 * A named prepared statement: each connection parses and plans it once and then runs
 * PostgreSQL's cached plan. For the pipeline's hottest statements (on an `indexPlans`
 * pool), whose parsing and planning cost as much as running them on a small batch.
 */
export function hotStatement(name: string, text: string, values: unknown[]): { name: string; text: string; values: unknown[] } {
  return { name, text, values };
}

/** A raw `pg` pool for hot paths (multi-row statements); Prisma serves the control plane. */
export function createPool(url: string, max = 10, opts: PoolOptions = {}): Pool {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const pool = new Pool({ connectionString, max, options: sessionOptions(schema, opts), connectionTimeoutMillis: 5000 });
  // A client that loses its connection must not crash the process: an idle one reports to
  // the pool, and a checked-out one (PostgreSQL restarted mid-transaction) emits 'error'
  // after its query was already rejected, with no listener while it is checked out. The
  // pool drops such a client when it is released.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
