import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { newId } from '@hookline/db';
import { MCP_SCOPES, newApiKey } from '@hookline/signing';
import type { McpDeps } from './mcp-deps';
import { TOOL_GROUPS, type ToolGroup } from './tools/tool-def';

/** New MCP keys get the read scopes unless told otherwise; mcp:admin:keys is never implied. */
export const DEFAULT_MCP_SCOPES = MCP_SCOPES.filter((s) => s !== 'mcp:admin:keys');

export const createKeyBody = z.object({
  name: z.string().min(1).max(200),
  scopes: z.array(z.enum(MCP_SCOPES)).min(1).optional(),
  expires_at: z.iso.datetime({ offset: true }).optional(),
}).strict();

export interface McpKeyView {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  tool_groups: string[];
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  key?: string;
}

interface KeyRow {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  tool_groups: string[];
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const view = (r: KeyRow, key?: string): McpKeyView => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  scopes: r.scopes,
  tool_groups: [...r.tool_groups].sort(),
  created_at: r.created_at.toISOString(),
  last_used_at: iso(r.last_used_at),
  expires_at: iso(r.expires_at),
  revoked_at: iso(r.revoked_at),
  ...(key ? { key } : {}),
});

const SELECT = `SELECT k.id, k.name, k.prefix, k.scopes, k.created_at, k.last_used_at, k.expires_at, k.revoked_at,
  COALESCE((SELECT array_agg(g.tool_group) FROM mcp_tool_grants g WHERE g.api_key_id = k.id), '{}') AS tool_groups
  FROM api_keys k WHERE k.tenant_id = $1 AND k.kind = 'mcp'`;

export async function listMcpKeys(deps: McpDeps, tenantId: string): Promise<McpKeyView[]> {
  const { rows } = await deps.pool.query<KeyRow>(`${SELECT} ORDER BY k.id DESC LIMIT 500`, [tenantId]);
  return rows.map((r) => view(r));
}

async function getKey(deps: McpDeps, tenantId: string, keyId: string): Promise<KeyRow> {
  const { rows } = await deps.pool.query<KeyRow>(`${SELECT} AND k.id = $2`, [tenantId, keyId]);
  if (!rows[0]) throw AppError.notFound('MCP key');
  return rows[0];
}

/** Creates an `mcp_…` key; the key itself is in this answer only (it is stored as sha256). */
export async function createMcpKey(deps: McpDeps, tenantId: string, body: z.infer<typeof createKeyBody>): Promise<McpKeyView> {
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw new AppError('unprocessable-entity', 'expires_at must be in the future.', { errors: [{ field: 'expires_at', message: 'must be in the future' }] });
  const k = newApiKey('mcp');
  const id = newId('key');
  await deps.pool.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes, kind, expires_at) VALUES ($1, $2, $3, $4, $5, $6, 'mcp', $7)`, [
    id, tenantId, body.name, k.prefix, k.hash, body.scopes ?? DEFAULT_MCP_SCOPES, expiresAt,
  ]);
  return view(await getKey(deps, tenantId, id), k.key);
}

/** Revokes at once; its write groups go with it. */
export async function revokeMcpKey(deps: McpDeps, tenantId: string, keyId: string): Promise<McpKeyView> {
  await getKey(deps, tenantId, keyId);
  await deps.pool.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [keyId]);
  await deps.pool.query(`DELETE FROM mcp_tool_grants WHERE api_key_id = $1`, [keyId]);
  return view(await getKey(deps, tenantId, keyId));
}

export function parseGroup(group: string): ToolGroup {
  const g = TOOL_GROUPS.find((x) => x === group);
  if (!g) throw AppError.validation([{ field: 'group', message: `must be one of ${TOOL_GROUPS.join(', ')}` }]);
  return g;
}

export async function setToolGroup(deps: McpDeps, tenantId: string, keyId: string, group: ToolGroup, enabled: boolean, grantedBy: string): Promise<McpKeyView> {
  const key = await getKey(deps, tenantId, keyId);
  if (key.revoked_at) throw new AppError('conflict', 'The MCP key is revoked.');
  if (enabled) {
    await deps.pool.query(`INSERT INTO mcp_tool_grants (api_key_id, tool_group, tenant_id, granted_by) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [keyId, group, tenantId, grantedBy]);
  } else {
    await deps.pool.query(`DELETE FROM mcp_tool_grants WHERE api_key_id = $1 AND tool_group = $2`, [keyId, group]);
  }
  return view(await getKey(deps, tenantId, keyId));
}
