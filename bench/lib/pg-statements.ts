// With --private-servers: the statements PostgreSQL spent its time on during the run
// (pg_stat_statements of the run's private cluster).
import { Client } from 'pg';
import { parseDatabaseUrl } from '@hookline/db';

export interface StatementCost {
  calls: number;
  totalMs: number;
  meanMs: number;
  rowsPerCall: number;
  sharePct: number;
  /** Mean planning time per call (0 unless the server runs with pg_stat_statements.track_planning=on). */
  planMeanMs: number;
  query: string;
}

export async function topStatements(url: string, limit = 12): Promise<StatementCost[]> {
  const c = new Client({ connectionString: parseDatabaseUrl(url).connectionString });
  await c.connect();
  try {
    const r = await c.query<{ calls: string; total: number; mean: number; plan: number; rows: string; share: number; query: string }>(
      `SELECT calls, total_exec_time AS total, mean_exec_time AS mean, mean_plan_time AS plan, rows,
              100 * total_exec_time / NULLIF(sum(total_exec_time) OVER (), 0) AS share, query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       ORDER BY total_exec_time DESC LIMIT $1`,
      [limit],
    );
    return r.rows.map((x) => ({
      calls: Number(x.calls),
      totalMs: Math.round(x.total),
      meanMs: Math.round(x.mean * 1000) / 1000,
      rowsPerCall: Number(x.calls) ? Math.round((Number(x.rows) / Number(x.calls)) * 10) / 10 : 0,
      sharePct: Math.round((x.share ?? 0) * 10) / 10,
      planMeanMs: Math.round((x.plan ?? 0) * 1000) / 1000,
      query: x.query.replace(/\s+/g, ' ').slice(0, 220),
    }));
  } finally {
    await c.end();
  }
}
