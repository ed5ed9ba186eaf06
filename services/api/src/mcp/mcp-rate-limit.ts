import type { Response } from 'express';
import { AppError } from '@hookline/errors';
import type { PlanName } from '../config';
import { rateLimitKey, takeToken, type RateDecision } from '../limits/rate-limit';
import type { McpDeps } from './mcp-deps';

/**
 * The control API's per-tenant rate limit (http/pipeline.ts) applied to the MCP surface:
 * the same Redis token bucket (`rateLimitKey`), so a tenant's control-API and MCP requests
 * draw on one budget, with the limits of its plan, the same `X-RateLimit-*` headers, the
 * same 429 `rate-limit-exceeded` (`retry_after_seconds`, `Retry-After`), and the same
 * fail-open when Redis is unreachable. `cost` tokens are taken: one per request, or one per
 * tool call when a JSON-RPC batch carries several.
 */
export async function rateLimitMcp(deps: McpDeps, caller: { tenantId: string; plan: PlanName }, res: Response, cost = 1): Promise<void> {
  const limit = deps.rateLimits[caller.plan];
  const key = rateLimitKey(deps.queuePrefix, caller.tenantId);
  let decision: RateDecision | undefined;
  try {
    // A refused token is not taken, so a batch stops at the first one missing.
    for (let i = 0; i < cost && (decision?.allowed ?? true); i++) decision = await takeToken(deps.redis, key, limit);
  } catch (err) {
    deps.logger.warn('rate limiter unavailable', { err: (err as Error).message });
    return;
  }
  if (!decision) return;
  res.setHeader('X-RateLimit-Limit', String(limit.perMinute));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, decision.remaining)));
  if (!decision.allowed) {
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw new AppError('rate-limit-exceeded', `Rate limit of ${limit.perMinute} requests per minute (burst ${limit.burst}) exceeded.`, { retry_after_seconds: seconds }, { 'Retry-After': String(seconds) });
  }
}

/** Tool calls in a JSON-RPC body (a message or a batch): each counts against the limit. */
export function toolCallCount(body: unknown): number {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.filter((m) => (m as { method?: unknown } | null)?.method === 'tools/call').length;
}
