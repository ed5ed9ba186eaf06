import { destinationRateKey, type Redis } from '@hookline/queues';
import { redisScript } from './redis-script';

// A fixed one-second window per destination; grants min(wanted, what is left).
const TAKE = redisScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local allowed = math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - used)
if allowed <= 0 then return 0 end
redis.call('INCRBY', KEYS[1], allowed)
redis.call('PEXPIRE', KEYS[1], 2000)
return allowed
`);

/**
 * Per-destination requests per second, shared by every replica (one Lua call per
 * destination and batch). Returns how many of `wanted` may be sent in the current second
 * and when the next window opens.
 */
export async function takeRateTokens(redis: Redis, prefix: string, destinationId: string, perSecond: number, wanted: number, now = Date.now()): Promise<{ allowed: number; nextWindowAt: number }> {
  const second = Math.floor(now / 1000);
  const allowed = (await TAKE(redis, [destinationRateKey(prefix, destinationId, second)], [perSecond, wanted])) as number;
  return { allowed, nextWindowAt: (second + 1) * 1000 };
}
