import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '@hookline/errors';
import { hashApiKey } from '@hookline/signing';
import type { PlanName } from '../config';
import type { ApiCaller, McpDeps, McpPrincipal } from './mcp-deps';

export function unauthorized(detail: string): AppError {
  return new AppError('unauthorized', detail, {}, { 'WWW-Authenticate': 'X-MCP-API-Key' });
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return (Array.isArray(v) ? v[0] : v)?.trim() || undefined;
}

interface KeyRow {
  id: string;
  tenant_id: string;
  plan: PlanName;
  scopes: string[];
  kind: string;
  usable: boolean;
  stale_use: boolean;
  tool_groups: string[];
  rate_limit_per_minute: number | null;
  rate_limit_burst: number | null;
  expires_at: Date | null;
}

/** One lookup: the key by its sha256, its tenant's plan, whether it is usable, the write groups granted to it, and its own rate limit. */
async function findKey(deps: McpDeps, key: string): Promise<KeyRow | undefined> {
  const { rows } = await deps.pool.query<KeyRow>(
    `SELECT k.id, k.tenant_id, t.plan::text AS plan, k.scopes, k.kind, k.rate_limit_per_minute, k.rate_limit_burst, k.expires_at,
            (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) AS usable,
            (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute') AS stale_use,
            COALESCE((SELECT array_agg(g.tool_group) FROM mcp_tool_grants g WHERE g.api_key_id = k.id), '{}') AS tool_groups
       FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = $1`,
    [hashApiKey(key)],
  );
  return rows[0];
}

function touch(deps: McpDeps, row: KeyRow): void {
  if (!row.stale_use) return;
  deps.pool
    .query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, [row.id])
    .catch((err: Error) => deps.logger.warn('could not record mcp key use', { api_key_id: row.id, err: err.message }));
}

/** `X-MCP-API-Key: mcp_…`: must exist with kind mcp, unrevoked and unexpired. */
export async function authenticateMcp(deps: McpDeps, headers: IncomingHttpHeaders): Promise<McpPrincipal> {
  const key = header(headers, 'x-mcp-api-key');
  if (!key) throw unauthorized('An MCP API key is required in X-MCP-API-Key.');
  if (!key.startsWith('mcp_')) throw unauthorized('An MCP API key carries the mcp_ prefix.');
  const row = await findKey(deps, key);
  if (!row || row.kind !== 'mcp' || !row.usable) throw unauthorized('The MCP API key is invalid, revoked or expired.');
  touch(deps, row);
  const rateLimit = row.rate_limit_per_minute !== null && row.rate_limit_burst !== null ? { perMinute: row.rate_limit_per_minute, burst: row.rate_limit_burst } : null;
  return { keyId: row.id, tenantId: row.tenant_id, plan: row.plan, scopes: new Set(row.scopes), toolGroups: new Set(row.tool_groups), rateLimit, expiresAt: row.expires_at };
}

/** The default control-API authentication for key management: `X-API-Key` or Bearer `hk_…`. */
export async function authenticateApiKeyOnly(deps: McpDeps, headers: IncomingHttpHeaders): Promise<ApiCaller> {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header(headers, 'authorization') ?? '')?.[1];
  const key = header(headers, 'x-api-key') ?? bearer;
  if (!key) throw unauthorized('An API key (X-API-Key) or an MCP key with mcp:admin:keys (X-MCP-API-Key) is required.');
  const row = key.startsWith('hk_') ? await findKey(deps, key) : undefined;
  if (!row || row.kind !== 'api' || !row.usable) throw unauthorized('The API key is invalid, revoked or expired.');
  return { kind: 'api_key', id: row.id, tenantId: row.tenant_id, plan: row.plan, scopes: new Set(row.scopes), expiresAt: row.expires_at };
}

export function requireScope(scopes: ReadonlySet<string>, scope: string): void {
  if (!scopes.has(scope)) throw new AppError('insufficient-scope', `This credential lacks the ${scope} scope.`, { required_scope: scope });
}
