import type { Response } from 'express';
import type { PlanName } from '../config';
import { enforceRateLimit } from '../limits/rate-limit';
import type { McpDeps } from './mcp-deps';

/**
 * The control API's per-tenant rate limit (http/pipeline.ts) on the MCP surface: one budget
 * for a tenant's control-API and MCP requests, with the limits of its plan; `cost` tokens,
 * one per request or one per tool call when a JSON-RPC batch carries several.
 */
export function rateLimitMcp(deps: McpDeps, caller: { tenantId: string; plan: PlanName }, res: Response, cost = 1): Promise<void> {
  return enforceRateLimit({ redis: deps.redis, logger: deps.logger, prefix: deps.queuePrefix }, caller.tenantId, deps.rateLimits[caller.plan], res, cost);
}

/** Tool calls in a JSON-RPC body (a message or a batch): each counts against the limit. */
export function toolCallCount(body: unknown): number {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.filter((m) => (m as { method?: unknown } | null)?.method === 'tools/call').length;
}
