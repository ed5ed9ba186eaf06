import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { errorStatus } from '../http/api-problem';
import { requireScope } from './mcp-auth';
import { startAudit } from '../audit/audit-write';
import { TOOL_GROUP_NEEDS } from './mcp-grants';
import type { McpContext } from './mcp-deps';
import { parseOr400 } from './mcp-http';
import { evidenceTools } from './tools/evidence-tools';
import { operationsTools } from './tools/operations-tools';
import { defineTool, type AnyTool } from './tools/tool-def';
import { writeTools } from './tools/write-tools';

/**
 * Every endpoint an MCP key can call: path, scope, purpose (SPEC.md, MCP evidence endpoints),
 * key management (mcp:admin:keys) included.
 */
export const REST_MIRROR = [
  { method: 'GET', path: '/v1/mcp/health', scope: 'mcp:read:health', description: 'service health with build/version metadata' },
  { method: 'GET', path: '/v1/mcp/endpoints', scope: 'mcp:read:endpoints', description: 'available MCP endpoints and their scopes' },
  { method: 'GET', path: '/v1/mcp/evidence/{id}', scope: 'mcp:read:evidence', description: 'evidence by endpoint/resource id' },
  { method: 'GET', path: '/v1/mcp/deliveries/{id}/status', scope: 'mcp:read:deliveries', description: 'delivery status and outcome' },
  { method: 'GET', path: '/v1/mcp/planes', scope: 'mcp:read:planes', description: 'operational planes and status' },
  { method: 'GET', path: '/v1/mcp/logs/{id}', scope: 'mcp:read:logs', description: 'resource logs' },
  { method: 'POST', path: '/v1/mcp/tools/{name}', scope: 'the scope or tool group of the tool', description: 'calls one MCP tool over plain HTTP' },
  { method: 'POST', path: '/v1/mcp', scope: 'per tool', description: 'MCP Streamable HTTP endpoint (stateless, JSON responses)' },
  { method: 'GET', path: '/v1/tenants/{tid}/mcp-keys', scope: 'mcp:admin:keys', description: "the tenant's MCP keys, newest first, paged by limit and cursor (never the keys themselves)" },
  { method: 'POST', path: '/v1/tenants/{tid}/mcp-keys', scope: 'mcp:admin:keys', description: 'creates an MCP key with scopes the calling key holds' },
  { method: 'DELETE', path: '/v1/tenants/{tid}/mcp-keys/{kid}', scope: 'mcp:admin:keys', description: 'revokes an MCP key' },
  { method: 'DELETE', path: '/v1/tenants/{tid}/mcp-keys/{kid}/tool-groups/{group}', scope: 'mcp:admin:keys', description: `disables a write tool group for a key (enabling one needs a control-API credential with write:api-keys and the control-API scopes of what the group does: ${Object.entries(TOOL_GROUP_NEEDS).map(([g, needs]) => `${needs.join(' + ')} for ${g}`).join(', ')})` },
] as const;

const accessOf = (t: AnyTool): { scope: string | null; tool_group: string | null } =>
  'scope' in t.access ? { scope: t.access.scope, tool_group: null } : { scope: null, tool_group: t.access.group };

/** Shared by the tool and GET /v1/mcp/endpoints: what is there and what this key may call. */
export function endpointsReply(ctx: McpContext): Record<string, unknown> {
  const { scopes, toolGroups } = ctx.principal;
  return {
    endpoints: REST_MIRROR.map((e) => ({ ...e })),
    tools: MCP_TOOLS.map((t) => {
      const a = accessOf(t);
      return { name: t.name, ...a, enabled: a.scope ? scopes.has(a.scope) : toolGroups.has(a.tool_group ?? '') };
    }),
  };
}

const endpointsTool = defineTool({
  name: 'list_mcp_endpoints',
  title: 'List MCP endpoints',
  description: 'The REST mirror endpoints with their scopes, and every tool with the scope or write group it needs and whether this key may call it.',
  access: { scope: 'mcp:read:endpoints' },
  input: {},
  output: z.object({
    endpoints: z.array(z.object({ method: z.string(), path: z.string(), scope: z.string(), description: z.string() })),
    tools: z.array(z.object({ name: z.string(), scope: z.string().nullable(), tool_group: z.string().nullable(), enabled: z.boolean() })),
  }),
  run: async (ctx) => endpointsReply(ctx),
});

export const MCP_TOOLS: readonly AnyTool[] = [...evidenceTools, ...operationsTools, endpointsTool, ...writeTools];

export function findTool(name: string): AnyTool | undefined {
  return MCP_TOOLS.find((t) => t.name === name);
}

/** At most this many names of unknown arguments are audited, each cut to MAX_NAME characters. */
const MAX_EXTRA = 20;
const MAX_NAME = 100;

/**
 * What the audit row records of a write call's arguments: never the raw input. `arguments`
 * holds each argument the tool takes as its schema parsed it (one that does not parse is
 * named in `invalid_arguments` instead); arguments the tool does not take are named in
 * `extra_arguments` (MCP drops them, the REST mirror refuses them), their values never kept.
 */
export function auditedArguments(tool: AnyTool, raw: unknown): Record<string, unknown> {
  if (raw !== undefined && raw !== null && (typeof raw !== 'object' || Array.isArray(raw))) return { arguments: {}, invalid_arguments: ['arguments'] };
  const given = (raw ?? {}) as Record<string, unknown>;
  const args: Record<string, unknown> = {};
  const invalid: string[] = [];
  for (const [name, schema] of Object.entries(tool.input)) {
    if (!Object.hasOwn(given, name)) continue;
    const r = z.safeParse(schema, given[name]);
    if (!r.success) invalid.push(name);
    else if (r.data !== undefined) args[name] = r.data;
  }
  const extra = Object.keys(given).filter((k) => !Object.hasOwn(tool.input, k));
  return {
    arguments: args,
    ...(invalid.length ? { invalid_arguments: invalid } : {}),
    ...(extra.length ? { extra_arguments: extra.slice(0, MAX_EXTRA).map((k) => k.slice(0, MAX_NAME)) } : {}),
    ...(extra.length > MAX_EXTRA ? { extra_arguments_total: extra.length } : {}),
  };
}

/**
 * Runs a tool for an MCP key, in this order: a read tool needs its scope (403
 * insufficient-scope), a write tool its group enabled for the key (403 write-tool-disabled
 * with tool_group); only then are the arguments checked (400 validation-error), so a caller
 * without access learns nothing from them. `strict` refuses unknown arguments (the REST
 * mirror) instead of dropping them (MCP, as its JSON Schema allows). Every write call,
 * refused or not, is audited, fail closed: its row (auditedArguments, not the raw input) is
 * written before anything else, and when it cannot be the call fails (500) and nothing runs;
 * its outcome is recorded once the call ends (audit/audit-write.ts, startAudit).
 */
export async function runTool(ctx: McpContext, tool: AnyTool, raw: unknown, opts: { strict: boolean }): Promise<Record<string, unknown>> {
  const input = opts.strict ? z.object(tool.input).strict() : z.object(tool.input);
  if ('scope' in tool.access) {
    requireScope(ctx.principal.scopes, tool.access.scope);
    return tool.run(ctx, parseOr400(input, raw));
  }
  const group = tool.access.group;
  // The resource as the tool would read it, unknown arguments aside (even when the mirror refuses them).
  const known = z.object(tool.input).safeParse(raw ?? {});
  const finish = await startAudit(ctx.deps.pool, {
    tenantId: ctx.principal.tenantId,
    actor: `mcp_key:${ctx.principal.keyId}`,
    action: `mcp.${tool.name}`,
    resourceId: known.success ? (tool.resourceOf?.(known.data) ?? null) : null,
    params: { tool: tool.name, tool_group: group, ...auditedArguments(tool, raw) },
    requestId: ctx.requestId,
  });
  let status = 200;
  try {
    if (!ctx.principal.toolGroups.has(group)) {
      throw new AppError('write-tool-disabled', `The ${group} tool group is disabled for this MCP key; a tenant administrator can enable it.`, { tool_group: group });
    }
    return await tool.run(ctx, parseOr400(input, raw));
  } catch (err) {
    status = errorStatus(err);
    throw err;
  } finally {
    // The write (if any) is done and its row is there: a failure to record the outcome leaves
    // the row unfinished (UNFINISHED_OUTCOME) and is logged; the caller still gets the answer.
    await finish(status).catch((e: Error) => ctx.deps.logger.error('mcp audit outcome write failed', { tool: tool.name, request_id: ctx.requestId, err: e.message }));
  }
}
