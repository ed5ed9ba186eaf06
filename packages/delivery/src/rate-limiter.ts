import { destinationAdmitKey, destinationRateKey, type Redis } from '@hookline/queues';
import { redisScript } from './redis-script';

/**
 * Lua: `take(key, limit, wanted)` grants min(wanted, what is left) of a fixed one-second
 * window per destination. Shared by the deliverer's script below and the edge path's
 * one-call gate (circuit-breaker.ts), so both count one budget the same way.
 *
 * The limiter is a fixed-window counter, not a token bucket: each destination has one
 * counter per epoch second (`<prefix>:dst-rate:<destination id>:<second>`, packages/queues
 * destination-state.ts) counting what was granted in that second, and a second's counter
 * dies with its second. There is no carried-over capacity to refill: "returning a token"
 * means lowering the counter of the window it was taken from.
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

/**
 * Lua, edge path only: what a lease owner (one work poll) took from a window is noted
 * beside the window, in `<prefix>:dst-rate-spent:<destination id>:<second>` (a hash: lease
 * owner -> tokens), so that deliveries given back unsent can return their tokens
 * (`refund`). The note lives and dies with its window (same TTL as the counter).
 */
export const SPEND_LUA = `
local function spent(sk, owner, n)
  if owner == '' or n <= 0 then return end
  redis.call('HINCRBY', sk, owner, n)
  redis.call('PEXPIRE', sk, 2000)
end
`;

/**
 * Lua: `refund(k, sk, owner, n)` gives back to the window `k` up to `n` tokens the lease
 * owner `owner` took from that same window (its note in `sk`), never more than it took
 * and never below zero. The caller passes the keys of the window current by its clock:
 * tokens taken in an earlier window have no note there and are not returned (their window
 * is over; returning them into the current one would let it grant more than its limit).
 * Returns how many were returned.
 */
export const REFUND_LUA = `
local function refund(k, sk, owner, n)
  local took = tonumber(redis.call('HGET', sk, owner) or '0')
  local back = math.min(n, took, tonumber(redis.call('GET', k) or '0'))
  if back <= 0 then return 0 end
  redis.call('DECRBY', k, back)
  if took - back > 0 then redis.call('HINCRBY', sk, owner, -back) else redis.call('HDEL', sk, owner) end
  return back
end
`;

const TAKE = redisScript(`${TAKE_LUA}
return take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
`);

/** Where the edge path notes which lease owner took how many tokens of a window (SPEND_LUA). */
export function destinationRateSpentKey(prefix: string, destinationId: string, epochSecond: number): string {
  return `${prefix}:dst-rate-spent:${destinationId}:${epochSecond}`;
}

/** The epoch second `now` falls in, and when the next one opens. */
function windowOf(now: number): { second: number; nextWindowAt: number } {
  const second = Math.floor(now / 1000);
  return { second, nextWindowAt: (second + 1) * 1000 };
}

/** The one-second window `now` falls in (its counter, and the edge path's note of who took from it), and when the next one opens. */
export function rateWindow(prefix: string, destinationId: string, now: number): { key: string; spentKey: string; nextWindowAt: number } {
  const { second, nextWindowAt } = windowOf(now);
  return { key: destinationRateKey(prefix, destinationId, second), spentKey: destinationRateSpentKey(prefix, destinationId, second), nextWindowAt };
}

/**
 * Per-destination requests per second, shared by every replica and by the edge path.
 * Returns how many of `wanted` may be sent in the current second and when the next window
 * opens. The deliverer takes one token as each request leaves (in its concurrency slot);
 * the edge path takes a batch's tokens when it leases work (gateMany, same window).
 */
export async function takeRateTokens(redis: Redis, prefix: string, destinationId: string, perSecond: number, wanted: number, now = Date.now()): Promise<{ allowed: number; nextWindowAt: number }> {
  const w = rateWindow(prefix, destinationId, now);
  return { allowed: (await TAKE(redis, [w.key], [perSecond, wanted])) as number, nextWindowAt: w.nextWindowAt };
}

/**
 * The deliverer's admission at claim time: how many of `wanted` claimed deliveries of a
 * rate-limited destination may join its send queue in the current second, at most
 * `perSecond`, counted as the rate window is but in a counter of its own
 * (`<prefix>:dst-admit:…`). A slow destination's queue thus grows by at most its rate per
 * second, and no request is charged twice: the rate window is charged only when the
 * request leaves (takeRateTokens).
 */
export async function takeAdmissions(redis: Redis, prefix: string, destinationId: string, perSecond: number, wanted: number, now = Date.now()): Promise<{ allowed: number; nextWindowAt: number }> {
  const { second, nextWindowAt } = windowOf(now);
  return { allowed: (await TAKE(redis, [destinationAdmitKey(prefix, destinationId, second)], [perSecond, wanted])) as number, nextWindowAt };
}
