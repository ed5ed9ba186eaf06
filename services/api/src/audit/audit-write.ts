import { newId } from '@hookline/db';
import type { Pool } from '@hookline/db';
import { outcomeOf, redactParams } from './audit-log';

/**
 * Writing audit_logs rows, for every surface that audits: the REST route pipeline
 * (http/route.ts, http/pipeline.ts), logout and login (auth/), the MCP write tools
 * (mcp/mcp-catalog.ts) and MCP key management (mcp/mcp-keys.routes.ts). One format
 * (`success:200`, `client_error:403`), one redaction (audit-log.ts, redactParams).
 */
export interface AuditRecord {
  tenantId: string;
  /** The credential: `api_key:<id>`, `user:<id>`, `mcp_key:<id>`, `cluster:<id>`. */
  actor: string;
  /** The operationId of a REST route (`ingesters.create`), `mcp.<tool>`, `mcp_keys.create`, `auth.logout`. */
  action: string;
  resourceId: string | null;
  params: Record<string, unknown>;
  requestId: string;
}

export interface AuditEntry extends AuditRecord {
  status: number;
}

/**
 * The outcome of a row written before its write ran (startAudit) while the write has not
 * ended, and for good when its end could not be recorded (the process stopped, or the update
 * failed): a server error with an empty status, so every reader of audit_logs shows it as an
 * error (the audit list: outcome server_error, status null, level error, and found by
 * level=error; the logs tools: level error) and no one takes it for a success. The write may
 * have been applied.
 */
export const UNFINISHED_OUTCOME = 'server_error:';

const outcomeText = (status: number): string => `${outcomeOf(status)}:${status}`;

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
 * `params` as stored: redacted (secret-looking keys, header values, URL userinfo
 * credentials; depth capped: audit-log.ts), then made storable, so no value a caller passes
 * can make the row fail to insert.
 */
function paramsJson(params: Record<string, unknown>): string {
  return JSON.stringify(storable(redactParams(params)) ?? {});
}

const INSERT = `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`;

/**
 * One finished row, written after the fact: for what changes nothing whatever its outcome
 * (a login), never for a write, which is audited fail closed (startAudit).
 */
export async function writeAudit(pool: Pick<Pool, 'query'>, e: AuditEntry): Promise<void> {
  await pool.query(INSERT, [newId('aud'), e.tenantId, e.actor, e.action, e.resourceId, paramsJson(e.params), outcomeText(e.status), e.requestId]);
}

/** What the end of a write sets on its row besides the outcome: left out, the row's own is kept. */
export interface AuditEnd {
  /** The resource known only at the end (the id a create made). */
  resourceId?: string | null;
  params?: Record<string, unknown>;
}

/** Records how an audited write ended (its HTTP status) on the row startAudit wrote. */
export type FinishAudit = (status: number, end?: AuditEnd) => Promise<void>;

/**
 * Fail-closed auditing of a write: the row is inserted before the write runs (before its
 * checks too, so refusals are audited alike), with the outcome UNFINISHED_OUTCOME; when the
 * insert fails this throws and the caller must not run the write, so no write is ever
 * applied without its row. The returned function records the end (outcome, and the resource
 * or params known only then); the caller calls it when the write's code has returned or
 * thrown, whether or not its client is still there. A write whose end is never recorded (the
 * process died, the update failed) keeps UNFINISHED_OUTCOME: it may have been applied.
 *
 * The write does not share a transaction with the row: writes take their own connections and
 * transactions (several, for some) and also write to Redis. The cost is one statement more
 * than a single row written after the fact: one INSERT before, one UPDATE by primary key after.
 */
export async function startAudit(pool: Pick<Pool, 'query'>, e: AuditRecord): Promise<FinishAudit> {
  const id = newId('aud');
  await pool.query(INSERT, [id, e.tenantId, e.actor, e.action, e.resourceId, paramsJson(e.params), UNFINISHED_OUTCOME, e.requestId]);
  return async (status, end = {}) => {
    await pool.query(
      `UPDATE audit_logs SET outcome = $3, resource_id = CASE WHEN $4::boolean THEN $5 ELSE resource_id END, params = COALESCE($6::jsonb, params) WHERE id = $1 AND tenant_id = $2`,
      [id, e.tenantId, outcomeText(status), end.resourceId !== undefined, end.resourceId ?? null, end.params ? paramsJson(end.params) : null],
    );
  };
}
