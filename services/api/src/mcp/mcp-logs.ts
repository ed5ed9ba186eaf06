import { AppError } from '@hookline/errors';
import type { McpDeps } from './mcp-deps';

export interface LogEntry {
  at: string;
  level: 'info' | 'warn' | 'error';
  source: 'event' | 'delivery_attempt' | 'ingest_rejection' | 'audit';
  message: string;
  data: Record<string, unknown>;
}

// Each source as one SELECT of (at, level, source, message, data) for a resource id $1 of tenant $2.
const ATTEMPTS = (where: string): string => `
  SELECT a.started_at AS at, CASE WHEN a.status_code BETWEEN 200 AND 299 THEN 'info' WHEN a.status_code IS NULL THEN 'error' ELSE 'warn' END AS level,
         'delivery_attempt' AS source,
         'attempt ' || a.number || ' of ' || a.delivery_id || ': ' || COALESCE(a.status_code::text, COALESCE(a.error_kind, 'no response')) AS message,
         jsonb_build_object('attempt_id', a.id, 'delivery_id', a.delivery_id, 'status_code', a.status_code, 'error_kind', a.error_kind, 'duration_ms', a.duration_ms) AS data
    FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.tenant_id = $2 AND ${where}`;
const AUDIT = `
  SELECT created_at AS at, CASE WHEN outcome LIKE 'success%' THEN 'info' WHEN outcome LIKE 'client_error%' THEN 'warn' ELSE 'error' END AS level,
         'audit' AS source, action || ' by ' || actor || ': ' || outcome AS message,
         jsonb_build_object('audit_id', id, 'action', action, 'actor', actor, 'outcome', outcome, 'request_id', request_id) AS data
    FROM audit_logs WHERE tenant_id = $2 AND resource_id = $1`;
const EVENT = `
  SELECT received_at AS at, CASE WHEN status IN ('failed', 'dlq_queued', 'rejected') THEN 'warn' ELSE 'info' END AS level, 'event' AS source,
         'event ' || id || ' is ' || status || COALESCE(' (' || status_reason || ')', '') AS message,
         jsonb_build_object('event_id', id, 'type', type, 'status', status, 'correlation_id', correlation_id) AS data
    FROM events WHERE tenant_id = $2 AND id = $1`;
const REJECTIONS = `
  SELECT created_at AS at, 'warn' AS level, 'ingest_rejection' AS source, 'rejected: ' || reason_code AS message,
         jsonb_build_object('rejection_id', id, 'reason_code', reason_code, 'detail', detail) AS data
    FROM ingest_rejections WHERE tenant_id = $2 AND ingester_id = $1`;

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
 * not visible to the tenant" (not an empty list). At most `limit` entries (default 20, as
 * every list: SPEC.md, Limits).
 */
export async function logsFor(deps: McpDeps, tenantId: string, resourceId: string, opts: { level?: string; limit?: number } = {}): Promise<{ resource_id: string; entries: LogEntry[] }> {
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
    `SELECT * FROM (${sources.join(' UNION ALL ')}) l WHERE ($3::text IS NULL OR level = $3) ORDER BY at DESC LIMIT $4`,
    [resourceId, tenantId, opts.level ?? null, opts.limit ?? 20],
  );
  return { resource_id: resourceId, entries: rows.map((r) => ({ ...r, at: r.at.toISOString() })) };
}
