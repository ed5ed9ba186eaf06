import { keyExpiry } from '../auth/key-expiry';
import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { newId, withTransaction } from '@hookline/db';
import { MCP_SCOPES, newApiKey } from '@hookline/signing';
import type { PlanName, RateLimit } from '../config';
import { pageBounds, pageResult, readPage, type PageResult } from '../http/pagination';
import type { McpDeps } from './mcp-deps';
import { newKeyLimit } from './mcp-key-limit';
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
    .describe(
      "This key's own rate limit, taken on top of its tenant's plan limit; neither figure may exceed the plan's (400). Created with an MCP key, neither may exceed that key's own effective limit (422 unprocessable-entity naming the figure and that limit). Absent: MCP_KEY_RATE_LIMIT (default 60/120), capped at the plan, followed as it changes; created with an MCP key, those figures at creation, each at most that key's own effective one, stored as this key's own (source key), so a later raise of MCP_KEY_RATE_LIMIT does not lift it",
    )
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

/**
 * One page of the tenant's MCP keys, newest first, as every list of the api pages
 * (http/pagination.ts): `limit` (default 20, max 100) and `cursor`, or `offset`; a bad one is
 * a 400 validation-error.
 */
export async function listMcpKeys(deps: McpDeps, tenantId: string, query: Record<string, unknown>): Promise<PageResult<McpKeyView>> {
  const page = readPage(query, 'key');
  const b = pageBounds(page);
  const { rows } = await deps.pool.query<KeyRow>(`${SELECT} AND ($2::text IS NULL OR k.id < $2) ORDER BY k.id DESC LIMIT $3 OFFSET $4`, [tenantId, b.beforeId, b.take, b.skip]);
  return pageResult(rows.map((r) => view(deps, r)), page);
}

async function getKey(db: Pick<McpDeps['pool'], 'query'>, tenantId: string, keyId: string): Promise<KeyRow> {
  const { rows } = await db.query<KeyRow>(`${SELECT} AND k.id = $2`, [tenantId, keyId]);
  if (!rows[0]) throw AppError.notFound('MCP key');
  return rows[0];
}

/**
 * Creates an `mcp_…` key; the key itself is in this answer only (it is stored as sha256).
 * `creatorLimit`: the effective rate limit of the MCP key creating it, which caps the new
 * key's (mcp-key-limit.ts); null for a control-API credential (capped at the plan).
 */
export async function createMcpKey(
  deps: McpDeps,
  tenantId: string,
  plan: PlanName,
  body: z.infer<typeof createKeyBody>,
  creatorLimit: RateLimit | null = null,
  creatorExpiry: Date | null = null,
): Promise<McpKeyView> {
  const own = newKeyLimit(deps, plan, body.rate_limit, creatorLimit);
  // Never outliving an expiring creator (an API key or MCP key): auth/key-expiry.ts.
  const expiresAt = keyExpiry(body.expires_at, creatorExpiry);
  const k = newApiKey('mcp');
  const id = newId('key');
  // The answer is the row as inserted (a new key has no tool group; its tenant's plan is the
  // creator's): no read after the commit, which failing would answer an error for a key made.
  const { rows } = await deps.pool.query<Omit<KeyRow, 'plan' | 'tool_groups'>>(
    `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes, kind, expires_at, rate_limit_per_minute, rate_limit_burst) VALUES ($1, $2, $3, $4, $5, $6, 'mcp', $7, $8, $9)
     RETURNING id, name, prefix, scopes, created_at, last_used_at, expires_at, revoked_at, rate_limit_per_minute, rate_limit_burst`,
    [id, tenantId, body.name, k.prefix, k.hash, body.scopes ?? DEFAULT_MCP_SCOPES, expiresAt, own?.perMinute ?? null, own?.burst ?? null],
  );
  return view(deps, { ...rows[0]!, plan, tool_groups: [] }, k.key);
}

/**
 * Revokes at once; its write groups go with it, in the same transaction (never a revoked key
 * that keeps a group, nor groups gone from a key left live). The key's row is locked first,
 * so a group being enabled at the same time (setToolGroup) either lands before, and is
 * deleted here, or waits and then finds the key revoked.
 */
export async function revokeMcpKey(deps: McpDeps, tenantId: string, keyId: string, mayRevoke: (key: Pick<KeyRow, 'id' | 'scopes'>) => void): Promise<McpKeyView> {
  // The answer is read in the transaction, before the commit.
  const row = await withTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<Pick<KeyRow, 'id' | 'scopes'>>(`SELECT id, scopes FROM api_keys WHERE id = $1 AND tenant_id = $2 AND kind = 'mcp' FOR UPDATE`, [keyId, tenantId]);
    if (!rows[0]) throw AppError.notFound('MCP key');
    mayRevoke(rows[0]);
    await client.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND tenant_id = $2 AND kind = 'mcp' AND revoked_at IS NULL`, [keyId, tenantId]);
    await client.query(`DELETE FROM mcp_tool_grants WHERE api_key_id = $1 AND tenant_id = $2`, [keyId, tenantId]);
    return getKey(client, tenantId, keyId);
  });
  return view(deps, row);
}

export function parseGroup(group: string): ToolGroup {
  const g = TOOL_GROUPS.find((x) => x === group);
  if (!g) throw AppError.validation([{ field: 'group', message: `must be one of ${TOOL_GROUPS.join(', ')}` }]);
  return g;
}

export async function setToolGroup(deps: McpDeps, tenantId: string, keyId: string, group: ToolGroup, enabled: boolean, grantedBy: string): Promise<McpKeyView> {
  // One transaction, the answer read in it before the commit (never after it). Each statement
  // still sees what committed before it (read committed), as when they ran on their own.
  return view(deps, await withTransaction(deps.pool, (client) => changeToolGroup(client, tenantId, keyId, group, enabled, grantedBy)));
}

async function changeToolGroup(db: Pick<McpDeps['pool'], 'query'>, tenantId: string, keyId: string, group: ToolGroup, enabled: boolean, grantedBy: string): Promise<KeyRow> {
  const key = await getKey(db, tenantId, keyId);
  if (key.revoked_at) throw new AppError('conflict', 'The MCP key is revoked.');
  if (enabled) {
    // Only while the key is live, read under a share lock: a revoke in progress (it holds the
    // row) is waited for, so no group outlives the key.
    const { rowCount } = await db.query(
      `INSERT INTO mcp_tool_grants (api_key_id, tool_group, tenant_id, granted_by)
       SELECT k.id, $2, $3, $4 FROM (SELECT id FROM api_keys WHERE id = $1 AND tenant_id = $3 AND kind = 'mcp' AND revoked_at IS NULL FOR SHARE) k
       ON CONFLICT DO NOTHING`,
      [keyId, group, tenantId, grantedBy],
    );
    if (!rowCount && (await getKey(db, tenantId, keyId)).revoked_at) throw new AppError('conflict', 'The MCP key is revoked.');
  } else {
    await db.query(`DELETE FROM mcp_tool_grants WHERE api_key_id = $1 AND tool_group = $2 AND tenant_id = $3`, [keyId, group, tenantId]);
  }
  return getKey(db, tenantId, keyId);
}
