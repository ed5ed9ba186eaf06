import { AppError } from '@hookline/errors';
import type { McpDeps } from './mcp-deps';

export interface LogEntry {
  at: string;
  level: 'info' | 'warn' | 'error';
  source: 'event' | 'delivery_attempt' | 'ingest_rejection' | 'audit';
  message: string;
  data: Record<string, unknown>;
}

/** The ids get_logs takes and GET /v1/mcp/logs/{id} answers (any other: 404): a prefixed resource id. */
export const LOG_RESOURCE_ID = /^[a-z]{3}_[0-9a-z]{10,40}$/;

// Each source as one parenthesized SELECT of (at, level, source, message, data) for a resource
// id $1 of tenant $2: its own newest `$4` entries of level $3 (or any), by an order its index
// gives where a resource can have many (an ingester's rejections: anyone can make them by
// posting unsigned requests; audit entries), so the union reads a page per source, never all
// of them, and the level filter applies before each LIMIT.
const branch = (select: string, level: string, from: string, order: string): string =>
  `(SELECT ${select} ${from} AND ($3::text IS NULL OR ${level} = $3) ORDER BY ${order} LIMIT $4)`;

const ATTEMPT_LEVEL = `CASE WHEN a.status_code BETWEEN 200 AND 299 THEN 'info' WHEN a.status_code IS NULL THEN 'error' ELSE 'warn' END`;
// A delivery's or an event's attempts: a few per delivery (delivery_attempts_delivery_id_number_idx), sorted.
const ATTEMPTS = (where: string): string =>
  branch(
    `a.started_at AS at, ${ATTEMPT_LEVEL} AS level, 'delivery_attempt' AS source,
     'attempt ' || a.number || ' of ' || a.delivery_id || ': ' || COALESCE(a.status_code::text, COALESCE(a.error_kind, 'no response')) AS message,
     jsonb_build_object('attempt_id', a.id, 'delivery_id', a.delivery_id, 'status_code', a.status_code, 'error_kind', a.error_kind, 'duration_ms', a.duration_ms) AS data`,
    ATTEMPT_LEVEL,
    `FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.tenant_id = $2 AND ${where}`,
    'a.started_at DESC',
  );
const AUDIT_LEVEL = `CASE WHEN outcome LIKE 'success%' THEN 'info' WHEN outcome LIKE 'client_error%' THEN 'warn' ELSE 'error' END`;
// Newest first by created_at: an index on (tenant_id, resource_id, created_at) gives the order.
const AUDIT = branch(
  `created_at AS at, ${AUDIT_LEVEL} AS level, 'audit' AS source, action || ' by ' || actor || ': ' || outcome AS message,
   jsonb_build_object('audit_id', id, 'action', action, 'actor', actor, 'outcome', outcome, 'request_id', request_id) AS data`,
  AUDIT_LEVEL,
  `FROM audit_logs WHERE tenant_id = $2 AND resource_id = $1`,
  'created_at DESC',
);
const EVENT_LEVEL = `CASE WHEN status IN ('failed', 'dlq_queued', 'rejected') THEN 'warn' ELSE 'info' END`;
const EVENT = branch(
  `received_at AS at, ${EVENT_LEVEL} AS level, 'event' AS source,
   'event ' || id || ' is ' || status || COALESCE(' (' || status_reason || ')', '') AS message,
   jsonb_build_object('event_id', id, 'type', type, 'status', status, 'correlation_id', correlation_id) AS data`,
  EVENT_LEVEL,
  `FROM events WHERE tenant_id = $2 AND id = $1`,
  'received_at DESC',
);
// Newest first by id (time-sortable, so creation order): ingest_rejections_ingester_id_id_idx
// read backwards, a page of rows however many rejections the ingester has.
const REJECTIONS = branch(
  `created_at AS at, 'warn' AS level, 'ingest_rejection' AS source, 'rejected: ' || reason_code AS message,
   jsonb_build_object('rejection_id', id, 'reason_code', reason_code, 'detail', detail) AS data`,
  `'warn'`,
  `FROM ingest_rejections WHERE ingester_id = $1 AND tenant_id = $2`,
  'id DESC',
);

const BY_PREFIX: Record<string, { table: string; sources: string[] }> = {
  dlv: { table: 'deliveries', sources: [ATTEMPTS('a.delivery_id = $1'), AUDIT] },
  evt: { table: 'events', sources: [EVENT, ATTEMPTS('d.event_id = $1'), AUDIT] },
  ing: { table: 'ingesters', sources: [REJECTIONS, AUDIT] },
};

// Other resources with a row of their own (kept when deleted, except saved payloads and
// users): their logs are their audit entries.
const AUDITED_TABLES: Record<string, string> = { dst: 'destinations', flw: 'delivery_flows', key: 'api_keys', cls: 'clusters', spl: 'saved_payloads', usr: 'users' };

/**
 * Whether the id names something of the tenant: the tenant itself, a row of its, or a
 * resource its audit log names (one deleted since, say).
 */
async function knownToTenant(deps: McpDeps, tenantId: string, resourceId: string, prefix: string): Promise<boolean> {
  if (resourceId === tenantId) return true;
  const table = Object.hasOwn(AUDITED_TABLES, prefix) ? AUDITED_TABLES[prefix] : undefined;
  const row = table ? `EXISTS (SELECT 1 FROM ${table} WHERE id = $1 AND tenant_id = $2) OR ` : '';
  const { rows } = await deps.pool.query<{ known: boolean }>(`SELECT ${row}EXISTS (SELECT 1 FROM audit_logs WHERE tenant_id = $2 AND resource_id = $1) AS known`, [resourceId, tenantId]);
  return rows[0]?.known === true;
}

/**
 * Logs of one resource, newest first: delivery attempts, ingest rejections, the event's
 * state, and audit entries. Ids of deliveries, events and ingesters must be the tenant's;
 * any other id gets its audit entries, and must name the tenant, one of its resources or
 * something its audit log names: otherwise 404, as SPEC.md says of a resource "missing or
 * not visible to the tenant" (not an empty list), as is an id of another shape (no query).
 * At most `limit` entries (default 20, as every list: SPEC.md, Limits): at most that many
 * from each source, then the newest of them.
 */
export async function logsFor(deps: McpDeps, tenantId: string, resourceId: string, opts: { level?: string; limit?: number } = {}): Promise<{ resource_id: string; entries: LogEntry[] }> {
  if (!LOG_RESOURCE_ID.test(resourceId)) throw AppError.notFound('resource');
  const prefix = resourceId.split('_')[0] ?? '';
  // Own keys only: `constructor_x` must not find Object.prototype.constructor.
  const known = Object.hasOwn(BY_PREFIX, prefix) ? BY_PREFIX[prefix] : undefined;
  if (known) {
    const { rows } = await deps.pool.query(`SELECT 1 FROM ${known.table} WHERE id = $1 AND tenant_id = $2`, [resourceId, tenantId]);
    if (!rows.length) throw AppError.notFound('resource');
  } else if (!(await knownToTenant(deps, tenantId, resourceId, prefix))) {
    throw AppError.notFound('resource');
  }
  const sources = known?.sources ?? [AUDIT];
  const { rows } = await deps.pool.query<Omit<LogEntry, 'at'> & { at: Date }>(
    `SELECT * FROM (${sources.join(' UNION ALL ')}) l ORDER BY at DESC LIMIT $4`,
    [resourceId, tenantId, opts.level ?? null, opts.limit ?? 20],
  );
  return { resource_id: resourceId, entries: rows.map((r) => ({ ...r, at: r.at.toISOString() })) };
}
