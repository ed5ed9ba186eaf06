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
