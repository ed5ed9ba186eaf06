import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { newId } from '@hookline/db';
import { MCP_SCOPES, newApiKey } from '@hookline/signing';
import type { PlanName } from '../config';
import type { McpDeps } from './mcp-deps';
import { mcpKeyLimit, type KeyLimitSource } from './mcp-rate-limit';
import { TOOL_GROUPS, type ToolGroup } from './tools/tool-def';

/** New MCP keys get the read scopes unless told otherwise; mcp:admin:keys is never implied. */
export const DEFAULT_MCP_SCOPES = MCP_SCOPES.filter((s) => s !== 'mcp:admin:keys');

/** Bound of each figure of a key's own rate limit (it is capped at the tenant's plan too). */
export const MAX_KEY_RATE = 1_000_000;
const rateFigure = z.number().int().min(1).max(MAX_KEY_RATE);

export const createKeyBody = z.object({
  name: z.string().min(1).max(200),
  scopes: z.array(z.enum(MCP_SCOPES)).min(1).optional(),
  expires_at: z.iso.datetime({ offset: true }).optional(),
  rate_limit: z
    .object({
      per_minute: rateFigure.describe('Tokens the key\'s bucket refills per minute'),
      burst: rateFigure.describe('Tokens the bucket holds at most'),
    })
    .strict()
    .describe("This key's own rate limit, taken on top of its tenant's plan limit; neither figure may exceed the plan's (400). Absent: MCP_KEY_RATE_LIMIT (default 60/120), capped at the plan")
    .optional(),
}).strict();

export interface McpKeyView {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  tool_groups: string[];
  /** The limit of the key's bucket now, and where its figures come from. */
  rate_limit: { per_minute: number; burst: number; source: KeyLimitSource };
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
  plan: PlanName;
  rate_limit_per_minute: number | null;
  rate_limit_burst: number | null;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const view = (deps: McpDeps, r: KeyRow, key?: string): McpKeyView => {
  const own = r.rate_limit_per_minute !== null && r.rate_limit_burst !== null ? { perMinute: r.rate_limit_per_minute, burst: r.rate_limit_burst } : null;
  const { limit, source } = mcpKeyLimit(deps, r.plan, own);
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    scopes: r.scopes,
    tool_groups: [...r.tool_groups].sort(),
    rate_limit: { per_minute: limit.perMinute, burst: limit.burst, source },
    created_at: r.created_at.toISOString(),
    last_used_at: iso(r.last_used_at),
    expires_at: iso(r.expires_at),
    revoked_at: iso(r.revoked_at),
    ...(key ? { key } : {}),
  };
};

const SELECT = `SELECT k.id, k.name, k.prefix, k.scopes, k.created_at, k.last_used_at, k.expires_at, k.revoked_at,
  k.rate_limit_per_minute, k.rate_limit_burst, t.plan::text AS plan,
  COALESCE((SELECT array_agg(g.tool_group) FROM mcp_tool_grants g WHERE g.api_key_id = k.id), '{}') AS tool_groups
  FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.tenant_id = $1 AND k.kind = 'mcp'`;

export async function listMcpKeys(deps: McpDeps, tenantId: string): Promise<McpKeyView[]> {
  const { rows } = await deps.pool.query<KeyRow>(`${SELECT} ORDER BY k.id DESC LIMIT 500`, [tenantId]);
  return rows.map((r) => view(deps, r));
}

async function getKey(deps: McpDeps, tenantId: string, keyId: string): Promise<KeyRow> {
  const { rows } = await deps.pool.query<KeyRow>(`${SELECT} AND k.id = $2`, [tenantId, keyId]);
  if (!rows[0]) throw AppError.notFound('MCP key');
  return rows[0];
}

/**
 * A key's own rate limit may not exceed its tenant's plan limit, figure by figure: refused
 * (400, naming the figure and the plan's value) rather than clamped, so what an admin asks
 * for is what the key gets. A plan lowered later caps it where it is applied (mcpKeyLimit).
 */
function assertWithinPlan(deps: McpDeps, plan: PlanName, own: z.infer<typeof createKeyBody>['rate_limit']): void {
  if (!own) return;
  const cap = deps.rateLimits[plan];
  const errors = [
    ...(own.per_minute > cap.perMinute ? [{ field: 'rate_limit.per_minute', message: `must be at most ${cap.perMinute}, the per-minute limit of the tenant's ${plan} plan` }] : []),
    ...(own.burst > cap.burst ? [{ field: 'rate_limit.burst', message: `must be at most ${cap.burst}, the burst of the tenant's ${plan} plan` }] : []),
  ];
  if (errors.length) throw AppError.validation(errors);
}

/** Creates an `mcp_…` key; the key itself is in this answer only (it is stored as sha256). */
export async function createMcpKey(deps: McpDeps, tenantId: string, plan: PlanName, body: z.infer<typeof createKeyBody>): Promise<McpKeyView> {
  assertWithinPlan(deps, plan, body.rate_limit);
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw new AppError('unprocessable-entity', 'expires_at must be in the future.', { errors: [{ field: 'expires_at', message: 'must be in the future' }] });
  const k = newApiKey('mcp');
  const id = newId('key');
  await deps.pool.query(
    `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes, kind, expires_at, rate_limit_per_minute, rate_limit_burst) VALUES ($1, $2, $3, $4, $5, $6, 'mcp', $7, $8, $9)`,
    [id, tenantId, body.name, k.prefix, k.hash, body.scopes ?? DEFAULT_MCP_SCOPES, expiresAt, body.rate_limit?.per_minute ?? null, body.rate_limit?.burst ?? null],
  );
  return view(deps, await getKey(deps, tenantId, id), k.key);
}

/** Revokes at once; its write groups go with it. */
export async function revokeMcpKey(deps: McpDeps, tenantId: string, keyId: string): Promise<McpKeyView> {
  await getKey(deps, tenantId, keyId);
  await deps.pool.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [keyId]);
  await deps.pool.query(`DELETE FROM mcp_tool_grants WHERE api_key_id = $1`, [keyId]);
  return view(deps, await getKey(deps, tenantId, keyId));
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
  return view(deps, await getKey(deps, tenantId, keyId));
}
