// What a statement read, from its EXPLAIN (ANALYZE, FORMAT JSON) plan: rows per table
// (returned, filtered away, rechecked away; times loops) and the tables read by Seq Scan.
import type { Pool } from '@hookline/db';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

export interface PlanReads {
  /** Rows the plan's top node returned. */
  rows: number;
  seqScans: string[];
  reads: Record<string, number>;
}

/** Reads of every table in the plan, or only of `tables`. */
export function planReads(top: PlanNode, tables?: readonly string[]): PlanReads {
  const reads: Record<string, number> = {};
  const seqScans: string[] = [];
  const walk = (n: PlanNode): void => {
    const table = n['Relation Name'];
    if (table && (!tables || tables.includes(table))) {
      if (n['Node Type'] === 'Seq Scan') seqScans.push(table);
      reads[table] = (reads[table] ?? 0) + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * n['Actual Loops'];
    }
    n.Plans?.forEach(walk);
  };
  walk(top);
  return { rows: top['Actual Rows'], seqScans, reads };
}

/** The plan of one statement, run under EXPLAIN ANALYZE. */
export async function explainAnalyze(pool: Pick<Pool, 'query'>, sql: string, params: unknown[]): Promise<PlanNode> {
  const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  return rows[0]!['QUERY PLAN'][0].Plan;
}

/**
 * A pool stand-in that runs each statement it is given under EXPLAIN ANALYZE (answering no
 * rows) and keeps the last plan: for code that sends one statement, such as evidenceFor.
 */
export function analysingPool(pool: Pick<Pool, 'query'>): { pool: Pool; plan: () => PlanNode | undefined } {
  let top: PlanNode | undefined;
  const analysing = {
    query: async (sql: string, params: unknown[]) => {
      top = await explainAnalyze(pool, sql, params);
      return { rows: [] };
    },
  } as unknown as Pool;
  return { pool: analysing, plan: () => top };
}
