import { loadConfig } from '@hookline/config';
import type { Pool } from '@hookline/db';
import { edgeStatusEnv, heldSql } from '@hookline/delivery';

/** What the cluster views show about a plane's agents, beside last_seen_at and agent_version. */
export interface ClusterStatus {
  /** An agent contacted the service within EDGE_CONNECTED_WINDOW_MS. */
  connected: boolean;
  /** Deliveries leased to the cluster's agents and not reported yet (unexpired leases). */
  in_flight: number;
}

let windowMs: number | undefined;
/** Read once from the environment (the cluster routes have no edge config of their own). */
export function connectedWindowMs(): number {
  return (windowMs ??= loadConfig(edgeStatusEnv).EDGE_CONNECTED_WINDOW_MS);
}

export function isConnected(lastSeenAt: Date | null, now = Date.now()): boolean {
  return lastSeenAt !== null && now - lastSeenAt.getTime() < connectedWindowMs();
}

export const IN_FLIGHT_SQL = `
SELECT t.cluster_id AS id, count(*)::int AS n
FROM deliveries d JOIN destinations t ON t.id = d.destination_id
WHERE t.cluster_id = ANY($1::text[]) AND ${heldSql('d')}
GROUP BY t.cluster_id`;

/** Status of each cluster (by id), for the cluster routes and the planes view. */
export async function readClusterStatus(pool: Pick<Pool, 'query'>, clusters: { id: string; lastSeenAt: Date | null }[]): Promise<Map<string, ClusterStatus>> {
  const out = new Map<string, ClusterStatus>();
  if (clusters.length === 0) return out;
  const { rows } = await pool.query<{ id: string; n: number }>(IN_FLIGHT_SQL, [clusters.map((c) => c.id)]);
  const inFlight = new Map(rows.map((r) => [r.id, r.n]));
  for (const c of clusters) out.set(c.id, { connected: isConnected(c.lastSeenAt), in_flight: inFlight.get(c.id) ?? 0 });
  return out;
}

/**
 * An agent was heard from: last_seen_at and its version. Written at most once a second
 * per cluster (many agents and reports would otherwise rewrite the row constantly).
 */
export async function touchCluster(pool: Pool, clusterId: string, agentVersion: string): Promise<void> {
  await pool.query(
    `UPDATE clusters SET last_seen_at = now(), agent_version = $2
     WHERE id = $1 AND (last_seen_at IS NULL OR last_seen_at < now() - interval '1 second' OR agent_version IS DISTINCT FROM $2)`,
    [clusterId, agentVersion || null],
  );
}
