// Reading EXPLAIN (ANALYZE, FORMAT JSON) plans in the plan tests: the scans of the
// deliveries table and how many rows they read.
import type { Pool } from '@hookline/db';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

export interface DeliveriesScans {
  /** Every scan node on the deliveries table. */
  scans: PlanNode[];
  /** Rows those scans produced or threw away, over all their loops. */
  visited: number;
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** Runs `EXPLAIN (ANALYZE, FORMAT JSON) sql` on `client` (inside the caller's transaction, which it should roll back) and reads the deliveries scans. */
export async function explainDeliveriesScans(client: Pick<Pool, 'query'>, sql: string, params: unknown[]): Promise<DeliveriesScans> {
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  const scans = nodes(rows[0]!['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === 'deliveries' && /Scan/.test(n['Node Type']));
  const visited = scans.reduce((sum, n) => sum + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * (n['Actual Loops'] ?? 1), 0);
  return { scans, visited };
}

/**
 * A DISABLED destination `dst_off` and an ACTIVE `dst_on` of the tenant, and events
 * `evt_<8 digits>` numbered `from`..`to` for their deliveries (the held plan tests' base).
 */
export async function seedOnOffDestinations(pool: Pick<Pool, 'query'>, tenantId: string, from: number, to: number): Promise<void> {
  await pool.query(
    `INSERT INTO destinations (id, tenant_id, name, url, state, updated_at) VALUES
       ('dst_off', $1, 'off', 'http://127.0.0.1:9/hook', 'DISABLED', now()), ('dst_on', $1, 'on', 'http://127.0.0.1:9/hook', 'ACTIVE', now())`,
    [tenantId],
  );
  await pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id)
     SELECT 'evt_' || lpad(i::text, 8, '0'), $1, 'ing_x', 'filtered', 'c' FROM generate_series(${from}, ${to}) i`,
    [tenantId],
  );
}
