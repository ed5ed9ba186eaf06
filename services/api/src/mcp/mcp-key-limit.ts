import { AppError, type FieldError } from '@hookline/errors';
import type { PlanName, RateLimit } from '../config';
import type { McpDeps } from './mcp-deps';
import { mcpKeyLimit } from './mcp-rate-limit';

/** A key's own rate limit as the creation body spells it. */
export interface AskedLimit {
  per_minute: number;
  burst: number;
}

/** The figures of `asked` above `cap`, each named with the cap and whose it is. */
function above(asked: AskedLimit, cap: RateLimit, whose: { perMinute: string; burst: string }): FieldError[] {
  return [
    ...(asked.per_minute > cap.perMinute ? [{ field: 'rate_limit.per_minute', message: `must be at most ${cap.perMinute}, ${whose.perMinute}` }] : []),
    ...(asked.burst > cap.burst ? [{ field: 'rate_limit.burst', message: `must be at most ${cap.burst}, ${whose.burst}` }] : []),
  ];
}

/**
 * The own rate limit to store for a new MCP key (null: none, it follows MCP_KEY_RATE_LIMIT;
 * only for a key made with a control-API credential and without `rate_limit`).
 *
 * Made with a control-API credential (`creator` null): what was asked, each figure at most
 * the tenant's plan (400 validation-error otherwise).
 *
 * Made with an MCP key (`creator`: that key's effective limit, never above the plan's, so the
 * tighter bound): what was asked, each figure at most the creator's (422
 * unprocessable-entity otherwise, naming the figure and the creator's value), so an MCP
 * administrator cannot hand out more than it has. Asked for nothing, the new key gets
 * MCP_KEY_RATE_LIMIT (capped at the plan) and, per figure, no more than the creator's,
 * always stored as its own limit (source `key`), also where the default is at or below the
 * creator's: a later raise of MCP_KEY_RATE_LIMIT then lifts neither figure above what the
 * creator could hand out when it made the key.
 * Refused, never clamped: what an admin asks for is what the key gets.
 */
export function newKeyLimit(deps: Pick<McpDeps, 'rateLimits' | 'mcpKeyRateLimit'>, plan: PlanName, asked: AskedLimit | undefined, creator: RateLimit | null): RateLimit | null {
  if (!creator) {
    const errors = asked ? above(asked, deps.rateLimits[plan], { perMinute: `the per-minute limit of the tenant's ${plan} plan`, burst: `the burst of the tenant's ${plan} plan` }) : [];
    if (errors.length) throw AppError.validation(errors);
    return asked ? { perMinute: asked.per_minute, burst: asked.burst } : null;
  }
  if (asked) {
    const errors = above(asked, creator, { perMinute: 'the per-minute limit of the MCP key creating it', burst: 'the burst of the MCP key creating it' });
    if (errors.length) {
      const detail = `A key created with an MCP key cannot have a higher rate limit than that key's own (${creator.perMinute} per minute, burst ${creator.burst}).`;
      throw new AppError('unprocessable-entity', detail, { errors });
    }
    return { perMinute: asked.per_minute, burst: asked.burst };
  }
  // Always stored, even where the default is at or below the creator's figures: a key that
  // followed MCP_KEY_RATE_LIMIT would rise with it, above its creator, once it is raised.
  const fallback = mcpKeyLimit(deps, plan, null).limit;
  return { perMinute: Math.min(fallback.perMinute, creator.perMinute), burst: Math.min(fallback.burst, creator.burst) };
}
