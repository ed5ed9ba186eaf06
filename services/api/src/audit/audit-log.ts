import { newId } from '@hookline/db';
import type { AppContext } from '../context';
import { maskUrlCredentials } from '../destinations/url-credentials';

// Secret-bearing fields are replaced, header maps keep their names only (values may be tokens),
// header rules keep their names and nulls ("must be present"), and URLs lose their userinfo
// credential (https://user:****@host/…, as destination views show them).
const SECRET_KEY = /(secret|password|token|private|credential|^key$|_key$|^cert$|^ca$)/i;

export function redactParams(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return maskUrlCredentials(value);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactParams(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (SECRET_KEY.test(k)) out[k] = '[redacted]';
    else if (k === 'headers' && v && typeof v === 'object' && !Array.isArray(v)) out[k] = Object.fromEntries(Object.keys(v).map((h) => [h, '[redacted]']));
    else if (k === 'required_headers' && v && typeof v === 'object' && !Array.isArray(v)) out[k] = Object.fromEntries(Object.entries(v).map(([h, x]) => [h, x === null ? null : '[redacted]']));
    else if (k === 'body' && typeof v === 'string') out[k] = `[${Buffer.byteLength(v)} bytes]`;
    else out[k] = redactParams(v, depth + 1);
  }
  return out;
}

export type AuditOutcome = 'success' | 'client_error' | 'server_error';

export function outcomeOf(status: number): AuditOutcome {
  return status < 400 ? 'success' : status < 500 ? 'client_error' : 'server_error';
}

export interface AuditEntry {
  tenantId: string;
  actor: string;
  action: string;
  resourceId: string | null;
  params: unknown;
  status: number;
  requestId: string;
}

/** One row per write: who, what, with which (redacted) parameters, and how it ended. */
export async function recordAudit(app: AppContext, e: AuditEntry): Promise<void> {
  await app.pool.query(
    `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [newId('aud'), e.tenantId, e.actor, e.action, e.resourceId, JSON.stringify(redactParams(e.params) ?? {}), `${outcomeOf(e.status)}:${e.status}`, e.requestId],
  );
}
