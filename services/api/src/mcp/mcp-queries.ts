import { AppError } from '@hookline/errors';
import { shownStatusSql } from '@hookline/delivery';
import { queueDepths } from '@hookline/queues';
import { readClusterStatus } from '../edge/cluster-status';
import type { McpDeps } from './mcp-deps';

export type Row = Record<string, unknown>;

/** Dates as ISO strings, so rows are JSON as they are. */
export function isoRow<T extends Row>(row: T): T {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v])) as T;
}

/** A dependency check's result, or null when it failed; why goes to the log, never into the answer (it may name internals). */
async function attempt<T>(deps: McpDeps, name: string, p: Promise<T>): Promise<T | null> {
  return p.catch((e: Error) => {
    deps.logger.warn('MCP health check failed', { check: name, error: e.message });
    return null;
  });
}

async function check(deps: McpDeps, name: string, p: Promise<unknown>): Promise<{ ok: boolean }> {
  return { ok: (await attempt(deps, name, p.then(() => true))) !== null };
}

/** Service health with build metadata. */
export async function health(deps: McpDeps): Promise<Row> {
  const [database, redis] = await Promise.all([check(deps, 'database', deps.pool.query('SELECT 1')), check(deps, 'redis', deps.redis.ping())]);
  return { status: database.ok && redis.ok ? 'ok' : 'degraded', service: 'hookline-api', version: deps.build.version, commit: deps.build.commit, time: new Date().toISOString(), checks: { database, redis } };
}

/** Readiness across domains: storage, queues, and this tenant's evidence pipeline. */
export async function readiness(deps: McpDeps, tenantId: string): Promise<Row> {
  const [database, redis] = await Promise.all([check(deps, 'database', deps.pool.query('SELECT 1')), check(deps, 'redis', deps.redis.ping())]);
  const depths = redis.ok ? await attempt(deps, 'queues', queueDepths(deps.producer)) : null;
  const queues = depths ? { ok: true, depths } : { ok: false };
  const evidence = database.ok
    ? await deps.pool
        .query<{ unsealed: string; latest_root_at: Date | null }>(
          `SELECT (SELECT count(*) FROM evidence_receipts WHERE tenant_id = $1 AND merkle_root_id IS NULL) AS unsealed,
                  (SELECT max(created_at) FROM merkle_roots WHERE tenant_id = $1) AS latest_root_at`,
          [tenantId],
        )
        .then((r) => ({ ok: true, unsealed_receipts: Number(r.rows[0]?.unsealed ?? 0), latest_root_at: r.rows[0]?.latest_root_at?.toISOString() ?? null }))
    : { ok: false };
  const domains = { database, redis, queues, evidence };
  return { status: Object.values(domains).every((d) => d.ok) ? 'ready' : 'degraded', domains };
}

const DELIVERY_COLUMNS = `id, event_id, destination_id, flow_id, ${shownStatusSql('deliveries')} AS status, attempt_count, replay_count, last_status_code, last_error,
  next_attempt_at, created_at, updated_at, delivered_at, exhausted_at`;

const OUTCOME: Record<string, string> = {
  pending: 'queued for delivery',
  delivering: 'in flight',
  delivered: 'delivered',
  failed: 'failed, a retry is scheduled',
  exhausted: 'all retries used; in the DLQ',
  replaying: 're-queued from the DLQ',
};

export async function deliveryStatus(deps: McpDeps, tenantId: string, deliveryId: string): Promise<Row> {
  const { rows } = await deps.pool.query<Row>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id = $1 AND tenant_id = $2`, [deliveryId, tenantId]);
  const row = rows[0];
  if (!row) throw AppError.notFound('delivery');
  return { ...isoRow(row), outcome: OUTCOME[String(row['status'])] ?? String(row['status']) };
}

export interface DeliveryFilter {
  status?: string;
  event_id?: string;
  destination_id?: string;
  limit?: number;
  cursor?: string;
}

/** Newest first; the cursor is the last id of the previous page. */
export async function listDeliveries(deps: McpDeps, tenantId: string, f: DeliveryFilter): Promise<Row> {
  const limit = f.limit ?? 20;
  const { rows } = await deps.pool.query<Row>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries
      WHERE tenant_id = $1 AND ($2::text IS NULL OR ${shownStatusSql('deliveries')} = $2) AND ($3::text IS NULL OR event_id = $3)
        AND ($4::text IS NULL OR destination_id = $4) AND ($5::text IS NULL OR id < $5)
      ORDER BY id DESC LIMIT $6`,
    [tenantId, f.status ?? null, f.event_id ?? null, f.destination_id ?? null, f.cursor ?? null, limit + 1],
  );
  const page = rows.slice(0, limit).map(isoRow);
  return { deliveries: page, next_cursor: rows.length > limit ? String(page[page.length - 1]?.['id']) : null };
}

/**
 * The planes: the shared control and delivery planes, and the tenant's edge clusters with
 * `connected` and `in_flight` as the cluster views compute them (readClusterStatus);
 * status `online` while connected, else `stale` (seen before) or `never_seen`.
 */
export async function planes(deps: McpDeps, tenantId: string): Promise<Row> {
  const [database, redis] = await Promise.all([check(deps, 'database', deps.pool.query('SELECT 1')), check(deps, 'redis', deps.redis.ping())]);
  const { rows } = await deps.pool.query<Row & { id: string; last_seen_at: Date | null }>(
    `SELECT id, name, state::text AS state, last_seen_at, agent_version, created_at FROM clusters WHERE tenant_id = $1 AND state <> 'DELETED' ORDER BY id DESC LIMIT 100`,
    [tenantId],
  );
  const status = await readClusterStatus(deps.pool, rows.map((c) => ({ id: c.id, lastSeenAt: c.last_seen_at })));
  const edge = (c: (typeof rows)[number]): Row => {
    const { connected, in_flight } = status.get(c.id) ?? { connected: false, in_flight: 0 };
    return { ...isoRow(c), kind: 'edge_cluster', status: connected ? 'online' : c.last_seen_at ? 'stale' : 'never_seen', connected, in_flight };
  };
  return {
    planes: [
      { id: 'control', kind: 'control_plane', name: 'Hookline control API', status: database.ok ? 'ok' : 'degraded' },
      { id: 'delivery', kind: 'data_plane', name: 'Hookline ingest, router and deliverer', status: database.ok && redis.ok ? 'ok' : 'degraded' },
      ...rows.map(edge),
    ],
  };
}
