import { newId } from '@hookline/db';
import type { Pool } from '@hookline/db';
import { redactParams } from '../audit/audit-log';

export interface McpAuditEntry {
  tenantId: string;
  /** `mcp_key:<id>` or the control-API caller (`api_key:<id>`, `user:<id>`). */
  actor: string;
  action: string;
  resourceId: string | null;
  params: Record<string, unknown>;
  status: number;
  requestId: string;
}

/**
 * The outcome of a row written before its call ran (startMcpAudit) while the call has not
 * ended, and for good when its end could not be recorded (the process stopped, or the update
 * failed): a server error with an empty status, so every reader of audit_logs shows it as an
 * error (the audit list: outcome server_error, status null, level error, and found by
 * level=error; the logs tools: level error) and no one takes it for a success. The write may
 * have been applied.
 */
export const UNFINISHED_OUTCOME = 'server_error:';

const outcomeOf = (status: number): string => `${status < 400 ? 'success' : status < 500 ? 'client_error' : 'server_error'}:${status}`;

// What jsonb (and text) cannot hold: U+0000, and a lone UTF-16 surrogate (JSON.stringify
// writes it as a \ud800 escape, which jsonb refuses).
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text as audit_logs can store it: U+0000 and lone surrogates become U+FFFD. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}

function storable(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storable);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [storableText(k), storable(v)]));
}

/**
 * `params` as stored: redacted as the REST pipeline's are (secret-looking keys, header values,
 * URL userinfo credentials; depth capped), then made storable, so no value a caller passes
 * can make the row fail to insert.
 */
function paramsJson(params: Record<string, unknown>): string {
  return JSON.stringify(storable(redactParams(params)) ?? {});
}

/**
 * One audit_logs row per MCP write or key change, in the api's format (`success:200`,
 * `client_error:403`), its params redacted as the REST pipeline's are (secret-looking keys,
 * header values, URL userinfo credentials), so no secret reaches it in clear.
 */
export async function auditMcp(pool: Pool, e: McpAuditEntry): Promise<void> {
  await pool.query(
    `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [newId('aud'), e.tenantId, e.actor, e.action, e.resourceId, paramsJson(e.params), outcomeOf(e.status), e.requestId],
  );
}

/** What the end of a call sets on its row besides the outcome: left out, the row's own is kept. */
export interface McpAuditEnd {
  resourceId?: string | null;
  params?: Record<string, unknown>;
}

/** Records how an audited call ended (its HTTP status) on the row startMcpAudit wrote. */
export type FinishAudit = (status: number, end?: McpAuditEnd) => Promise<void>;

/**
 * Fail-closed auditing of a write: the row is inserted before the write runs, with the
 * outcome UNFINISHED_OUTCOME; when the insert fails this throws and the caller must not run
 * the write (so no write is ever applied without its row). The returned function records
 * the end (outcome, and the resource or params known only then). The write cannot share a
 * transaction with the row: the tools run the control API's own code (replay service,
 * lifecycle), which takes its own connections and also writes to Redis.
 */
export async function startMcpAudit(pool: Pool, e: Omit<McpAuditEntry, 'status'>): Promise<FinishAudit> {
  const id = newId('aud');
  await pool.query(
    `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, e.tenantId, e.actor, e.action, e.resourceId, paramsJson(e.params), UNFINISHED_OUTCOME, e.requestId],
  );
  return async (status, end = {}) => {
    await pool.query(
      `UPDATE audit_logs SET outcome = $3, resource_id = CASE WHEN $4::boolean THEN $5 ELSE resource_id END, params = COALESCE($6::jsonb, params) WHERE id = $1 AND tenant_id = $2`,
      [id, e.tenantId, outcomeOf(status), end.resourceId !== undefined, end.resourceId ?? null, end.params ? paramsJson(end.params) : null],
    );
  };
}
