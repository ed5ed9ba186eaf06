import type { Response } from 'express';
import { AppError } from '@hookline/errors';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { RateLimit } from '../config';

/**
 * A token bucket per tenant in Redis, so every api replica shares it: `burst` tokens,
 * refilled at `perMinute` per minute. Redis's own clock is used, so replicas with skewed
 * clocks agree. Returns [allowed 0|1, tokens left (floor), ms until one token].
 */
const SCRIPT = `
local rate = tonumber(ARGV[1]) / 60000
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local data = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(data[1]) or burst
local ts = tonumber(data[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return { allowed, math.floor(tokens), wait }
`;

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
}

type WithLimiter = Redis & { hooklineRateLimit?: (key: string, perMinute: number, burst: number) => Promise<[number, number, number]> };

export async function takeToken(redis: Redis, key: string, limit: RateLimit): Promise<RateDecision> {
  const r = redis as WithLimiter;
  if (!r.hooklineRateLimit) r.defineCommand('hooklineRateLimit', { numberOfKeys: 1, lua: SCRIPT });
  const [allowed, remaining, wait] = await r.hooklineRateLimit!(key, limit.perMinute, limit.burst);
  return { allowed: allowed === 1, remaining, retryAfterMs: wait };
}

export function rateLimitKey(prefix: string, tenantId: string): string {
  return `${prefix}:ratelimit:${tenantId}`;
}

/**
 * Takes `cost` tokens (one per request; one per tool call of an MCP batch) from the tenant's
 * bucket, sets `X-RateLimit-*`, and throws 429 `rate-limit-exceeded` (`retry_after_seconds`,
 * `Retry-After`) when the bucket is empty; a refused token is not taken, so a batch stops at
 * the first one missing. Redis down: the API stays usable (fail open); readiness reports
 * Redis separately. The control API and the MCP surface both call this, on one budget.
 */
export async function enforceRateLimit(
  deps: { redis: Redis; logger: Logger; prefix: string },
  tenantId: string,
  limit: RateLimit,
  res: Response,
  cost = 1,
): Promise<void> {
  const key = rateLimitKey(deps.prefix, tenantId);
  let decision: RateDecision | undefined;
  try {
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
