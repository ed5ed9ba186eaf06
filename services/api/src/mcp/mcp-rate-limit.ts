import type { Response } from 'express';
import type { PlanName, RateLimit } from '../config';
import { enforceRateLimit, mcpKeyRateLimitKey } from '../limits/rate-limit';
import type { McpDeps } from './mcp-deps';

/** Where the numbers of a key's limit come from: its own, MCP_KEY_RATE_LIMIT, or capped at the plan. */
export type KeyLimitSource = 'key' | 'default' | 'plan';

/**
 * The limit of an MCP key's bucket: its own (set at creation) or MCP_KEY_RATE_LIMIT, capped
 * per figure at its tenant's plan limit (which may have gone down since the key was made).
 */
export function mcpKeyLimit(deps: Pick<McpDeps, 'rateLimits' | 'mcpKeyRateLimit'>, plan: PlanName, own: RateLimit | null): { limit: RateLimit; source: KeyLimitSource } {
  const wanted = own ?? deps.mcpKeyRateLimit;
  const cap = deps.rateLimits[plan];
  const limit = { perMinute: Math.min(wanted.perMinute, cap.perMinute), burst: Math.min(wanted.burst, cap.burst) };
  const capped = limit.perMinute !== wanted.perMinute || limit.burst !== wanted.burst;
  return { limit, source: capped ? 'plan' : own ? 'key' : 'default' };
}

/**
 * The control API's per-tenant rate limit (http/pipeline.ts) on the MCP surface, one budget
 * for a tenant's control-API and MCP requests with the limits of its plan, and, for a call
 * made with an MCP key, that key's own bucket on top: a token from each, all or none
 * (limits/rate-limit.ts). `cost` tokens: one per request, or one per tool call when a
 * JSON-RPC batch carries several. Key management with a control-API credential draws on
 * the tenant's bucket only.
 */
export function rateLimitMcp(
  deps: McpDeps,
  caller: { tenantId: string; plan: PlanName },
  key: { keyId: string; rateLimit: RateLimit | null } | null,
  res: Response,
  cost = 1,
): Promise<void> {
  const also = key ? [{ scope: 'mcp_key' as const, key: mcpKeyRateLimitKey(deps.queuePrefix, key.keyId), limit: mcpKeyLimit(deps, caller.plan, key.rateLimit).limit }] : [];
  return enforceRateLimit({ redis: deps.redis, logger: deps.logger, prefix: deps.queuePrefix }, caller.tenantId, deps.rateLimits[caller.plan], res, { cost, also });
}

/** Tool calls in a JSON-RPC body (a message or a batch): each counts against the limits. */
export function toolCallCount(body: unknown): number {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.filter((m) => (m as { method?: unknown } | null)?.method === 'tools/call').length;
}
