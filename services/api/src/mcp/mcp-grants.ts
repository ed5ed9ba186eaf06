import { AppError } from '@hookline/errors';
import type { API_SCOPES, MCP_SCOPES } from '@hookline/signing';
import type { ToolGroup } from './tools/tool-def';

type ApiScope = (typeof API_SCOPES)[number];
type McpScope = (typeof MCP_SCOPES)[number];

/**
 * What an MCP key may do, in control-API scopes: for each MCP scope and each write tool group,
 * the scopes a control-API credential needs to do the same over REST. A control-API
 * credential (API key or session) may give an MCP key a scope, or enable a write group for
 * it, only when it holds all of them (assertMayGrant), as an API key can only be given scopes
 * its creator holds (api-keys/api-key.routes.ts). Without this, `write:api-keys` alone made an
 * MCP key that reads deliveries and logs, retries, replays and switches destinations.
 *
 * - mcp:read:health: get_health is public over REST (/healthz, /readyz), but get_readiness
 *   reports the tenant's evidence pipeline (unsealed receipts, latest Merkle root):
 *   read:evidence.
 * - mcp:read:endpoints: the static list of MCP endpoints and tools, and which of them the
 *   calling key may call; no tenant data: nothing.
 * - mcp:read:evidence: evidence bundles (GET /v1/evidence…): read:evidence.
 * - mcp:read:deliveries: get_delivery_status, list_deliveries: read:deliveries.
 * - mcp:read:planes: the tenant's edge clusters and their status: read:clusters.
 * - mcp:read:logs: get_logs answers delivery attempts (read:deliveries), an event's state
 *   (read:events), an ingester's rejections (read:ingesters) and the audit entries of any
 *   resource (read:audit).
 * - mcp:admin:keys: lists, creates and revokes MCP keys: read:api-keys, write:api-keys.
 * - retry (retry_event) and replay (replay_delivery): POST …/events/{eid}/retry and
 *   …/deliveries/{did}/replay: write:deliveries.
 * - configuration (set_destination_state, its only tool; it changes a destination's state,
 *   nothing else): POST …/destinations/{id}/enable|disable: write:destinations. A tool added
 *   to the group must add what it changes here.
 *
 * Both tables are total (`satisfies`): a new MCP scope or tool group does not compile without
 * its entry.
 *
 * Checked when the grant is made, not when the tool runs: an MCP key then holds its own
 * scopes and groups, as an API key holds its own scopes, and does not follow later changes
 * of the credential that made it (which may be revoked, or a session, and is not recorded
 * for scopes). Revoking the MCP key, or disabling the group, is how a grant is taken back.
 * An MCP key managing keys keeps its own rule (mcp-keys.routes.ts): it hands out only MCP
 * scopes it holds and never enables a write group.
 */
export const MCP_SCOPE_NEEDS = {
  'mcp:read:health': ['read:evidence', 'read:deliveries'],
  'mcp:read:endpoints': [],
  'mcp:read:evidence': ['read:evidence'],
  'mcp:read:deliveries': ['read:deliveries'],
  'mcp:read:planes': ['read:clusters'],
  'mcp:read:logs': ['read:deliveries', 'read:events', 'read:ingesters', 'read:audit'],
  'mcp:admin:keys': ['read:api-keys', 'write:api-keys'],
} as const satisfies Record<McpScope, readonly ApiScope[]>;

export const TOOL_GROUP_NEEDS = {
  retry: ['write:deliveries'],
  replay: ['write:deliveries'],
  configuration: ['write:destinations'],
} as const satisfies Record<ToolGroup, readonly ApiScope[]>;

/**
 * 403 insufficient-scope unless `held` (a control-API credential's scopes) covers what the
 * MCP scope or write group needs: `required_scope` the first scope missing, `missing_scopes`
 * all of them, and `mcp_scope` or `tool_group` what was asked for.
 */
export function assertMayGrant(held: ReadonlySet<string>, what: { scope: McpScope } | { group: ToolGroup }): void {
  const needs: readonly string[] = 'scope' in what ? MCP_SCOPE_NEEDS[what.scope] : TOOL_GROUP_NEEDS[what.group];
  const missing = needs.filter((s) => !held.has(s));
  if (!missing.length) return;
  const [granted, asked] = 'scope' in what ? [`given ${what.scope}`, { mcp_scope: what.scope }] : [`given the ${what.group} tool group`, { tool_group: what.group }];
  throw new AppError('insufficient-scope', `An MCP key can only be ${granted} by a credential holding ${needs.join(', ')}; this credential lacks ${missing.join(', ')}.`, {
    required_scope: missing[0],
    missing_scopes: missing,
    ...asked,
  });
}

/**
 * Object permission for revoking an MCP key, as for API keys (api-keys/api-key.routes.ts): a
 * credential cannot take away a key that holds scopes it could not have granted. A
 * control-API credential must hold the control-API scopes of each of the key's MCP scopes
 * (the grant rule above); an MCP key must hold each of the key's MCP scopes itself. 403
 * permission-denied naming the key (`resource_id`) otherwise. Write groups are not weighed:
 * any credential that manages MCP keys may disable them. A scope this version does not know
 * needs nothing more than managing keys.
 */
export function assertMayRevoke(revoker: { viaMcp: boolean; scopes: ReadonlySet<string> }, key: { id: string; scopes: readonly string[] }): void {
  const needs = revoker.viaMcp ? key.scopes : key.scopes.flatMap((s) => MCP_SCOPE_NEEDS[s as McpScope] ?? []);
  const lacking = [...new Set(needs.filter((s) => !revoker.scopes.has(s)))];
  if (!lacking.length) return;
  throw new AppError('permission-denied', `This credential cannot revoke an MCP key holding scopes it could not grant (it lacks ${lacking.join(', ')}).`, { resource_id: key.id });
}
