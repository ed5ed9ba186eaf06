import { destinationRateKey, type Redis } from '@hookline/queues';
import { redisScript } from './redis-script';

/**
 * Lua: `take(key, limit, wanted)` grants min(wanted, what is left) of a fixed one-second
 * window per destination. Shared by the deliverer's script below and the edge path's
 * one-call gate (circuit-breaker.ts), so both count one budget the same way.
 */
export const TAKE_LUA = `
local function take(k, limit, wanted)
  local used = tonumber(redis.call('GET', k) or '0')
  local allowed = math.min(wanted, limit - used)
  if allowed <= 0 then return 0 end
  redis.call('INCRBY', k, allowed)
  redis.call('PEXPIRE', k, 2000)
  return allowed
end
`;

const TAKE = redisScript(`${TAKE_LUA}
return take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
`);

/** The one-second window `now` falls in, and when the next one opens. */
export function rateWindow(prefix: string, destinationId: string, now: number): { key: string; nextWindowAt: number } {
  const second = Math.floor(now / 1000);
  return { key: destinationRateKey(prefix, destinationId, second), nextWindowAt: (second + 1) * 1000 };
}

/**
 * Per-destination requests per second, shared by every replica and by the edge path (one
 * Lua call per destination and batch). Returns how many of `wanted` may be sent in the
 * current second and when the next window opens.
 */
export async function takeRateTokens(redis: Redis, prefix: string, destinationId: string, perSecond: number, wanted: number, now = Date.now()): Promise<{ allowed: number; nextWindowAt: number }> {
  const w = rateWindow(prefix, destinationId, now);
  const allowed = (await TAKE(redis, [w.key], [perSecond, wanted])) as number;
  return { allowed, nextWindowAt: w.nextWindowAt };
}
