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
 * One audit_logs row per MCP write or key change, in the api's format (`success:200`,
 * `client_error:403`), its params redacted as the REST pipeline's are (secret-looking keys,
 * header values, URL userinfo credentials), so tool arguments are recorded as sent but never a secret in them.
 */
export async function auditMcp(pool: Pool, e: McpAuditEntry): Promise<void> {
  const outcome = `${e.status < 400 ? 'success' : e.status < 500 ? 'client_error' : 'server_error'}:${e.status}`;
  await pool.query(
    `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [newId('aud'), e.tenantId, e.actor, e.action, e.resourceId, JSON.stringify(redactParams(e.params) ?? {}), outcome, e.requestId],
  );
}
