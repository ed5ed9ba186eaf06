import { AppError } from '@hookline/errors';
import { CLAIMABLE_STATUSES, freeSql, heldSql, shownStatusSql } from '@hookline/delivery';
import { queueDepths } from '@hookline/queues';
import { readClusterStatus } from '../edge/cluster-status';
import { openDeliveries } from '../runtime/open-deliveries';
import type { McpDeps } from './mcp-deps';
import { decodeCursor, encodeCursor } from './mcp-evidence';

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

export { OPEN_DELIVERIES_CAP } from '../runtime/open-deliveries';

/**
 * Readiness across domains: storage, the queues, and this tenant's deliveries and evidence
 * pipeline. Only this tenant's figures: the queues are shared by every tenant, so they say
 * ok (readable) or not, never their depths; the tenant's backlog is its open deliveries
 * (pending, failed or replaying) in PostgreSQL, counted up to OPEN_DELIVERIES_CAP through
 * deliveries_tenant_id_status_id_idx (a bounded read, however large the backlog).
 */
export async function readiness(deps: McpDeps, tenantId: string): Promise<Row> {
  const [database, redis] = await Promise.all([check(deps, 'database', deps.pool.query('SELECT 1')), check(deps, 'redis', deps.redis.ping())]);
  const queues = { ok: redis.ok && (await attempt(deps, 'queues', queueDepths(deps.producer))) !== null };
  const open = database.ok ? await attempt(deps, 'deliveries', openDeliveries(deps.pool, tenantId)) : null;
  const deliveries = open === null ? { ok: false } : { ok: true, ...open };
  const evidence = database.ok
    ? await deps.pool
        .query<{ unsealed: string; latest_root_at: Date | null }>(
          `SELECT (SELECT count(*) FROM evidence_receipts WHERE tenant_id = $1 AND merkle_root_id IS NULL) AS unsealed,
                  (SELECT max(created_at) FROM merkle_roots WHERE tenant_id = $1) AS latest_root_at`,
          [tenantId],
        )
        .then((r) => ({ ok: true, unsealed_receipts: Number(r.rows[0]?.unsealed ?? 0), latest_root_at: r.rows[0]?.latest_root_at?.toISOString() ?? null }))
    : { ok: false };
  const domains = { database, redis, queues, deliveries, evidence };
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

/**
 * The status filter on stored rows, as the REST list's statusWhere (deliveries/delivery.queries.ts):
 * `delivering` is a claimable status under a live lease, a claimable status matches only rows
 * without one, any other status is itself. A test on the stored status column, so
 * deliveries_tenant_id_status_id_idx finds the rows; the shown status (shownStatusSql, a
 * CASE) could only be tested row by row, on every delivery of every tenant walked in id order.
 */
function statusSql(status: string, param: (v: unknown) => string): string {
  if (status === 'delivering') return heldSql('deliveries');
  if ((CLAIMABLE_STATUSES as readonly string[]).includes(status)) return `status = ${param(status)}::"DeliveryStatus" AND ${freeSql('deliveries')}`;
  return `status = ${param(status)}::"DeliveryStatus"`;
}

/** Newest first; the cursor is the last id of the previous page. */
export async function listDeliveries(deps: McpDeps, tenantId: string, f: DeliveryFilter): Promise<Row> {
  const limit = f.limit ?? 20;
  const values: unknown[] = [];
  const param = (v: unknown): string => `$${values.push(v)}`;
  const where = [`tenant_id = ${param(tenantId)}`];
  if (f.status !== undefined) where.push(statusSql(f.status, param));
  if (f.event_id !== undefined) where.push(`event_id = ${param(f.event_id)}`);
  if (f.destination_id !== undefined) where.push(`destination_id = ${param(f.destination_id)}`);
  if (f.cursor !== undefined) where.push(`id < ${param(f.cursor)}`);
  const { rows } = await deps.pool.query<Row>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ${param(limit + 1)}`, values);
  const page = rows.slice(0, limit).map(isoRow);
  return { deliveries: page, next_cursor: rows.length > limit ? String(page[page.length - 1]?.['id']) : null };
}

/**
 * The planes, a page at a time: the shared control and delivery planes (first page only),
 * then the tenant's edge clusters, newest first, `limit` (default 20, max 100) a page, with
 * `connected` and `in_flight` as the cluster views compute them (readClusterStatus); status
 * `online` while connected, else `stale` (seen before) or `never_seen`. The cursor
 * (`next_cursor`, opaque) is the last cluster of the previous page.
 */
export async function planes(deps: McpDeps, tenantId: string, page: { limit?: number; cursor?: string } = {}): Promise<Row> {
  const limit = page.limit ?? 20;
  const after = page.cursor ? decodeCursor(page.cursor) : null;
  const { rows: found } = await deps.pool.query<Row & { id: string; last_seen_at: Date | null }>(
    `SELECT id, name, state::text AS state, last_seen_at, agent_version, created_at FROM clusters
      WHERE tenant_id = $1 AND state <> 'DELETED' AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [tenantId, after, limit + 1],
  );
  const rows = found.slice(0, limit);
  const last = rows[rows.length - 1];
  const next = found.length > limit && last ? encodeCursor(last.id) : null;
  const status = await readClusterStatus(deps.pool, rows.map((c) => ({ id: c.id, lastSeenAt: c.last_seen_at })));
  const edge = (c: (typeof rows)[number]): Row => {
    const { connected, in_flight } = status.get(c.id) ?? { connected: false, in_flight: 0 };
    return { ...isoRow(c), kind: 'edge_cluster', status: connected ? 'online' : c.last_seen_at ? 'stale' : 'never_seen', connected, in_flight };
  };
  const shared = async (): Promise<Row[]> => {
    const [database, redis] = await Promise.all([check(deps, 'database', deps.pool.query('SELECT 1')), check(deps, 'redis', deps.redis.ping())]);
    return [
      { id: 'control', kind: 'control_plane', name: 'Hookline control API', status: database.ok ? 'ok' : 'degraded' },
      { id: 'delivery', kind: 'data_plane', name: 'Hookline ingest, router and deliverer', status: database.ok && redis.ok ? 'ok' : 'degraded' },
    ];
  };
  return { planes: [...(after ? [] : await shared()), ...rows.map(edge)], next_cursor: next, has_more: next !== null };
}
