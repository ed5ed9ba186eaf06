import { destinationHealthKey, type BreakerState, type Redis } from '@hookline/queues';
import { redisScript } from './redis-script';

// Closed: everything passes. Open: nothing passes until the cooldown ends; then one caller
// gets the single probe (half-open) for `lease` ms (a lost probe is replaced after that);
// the rest come back a cooldown later. Returns {allowed, retry_at_ms}.
const ADMIT = redisScript(`
local k = KEYS[1]
local now, cooldown, lease, wanted = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local st = redis.call('HGET', k, 'state')
if st ~= 'open' and st ~= 'half_open' then return {wanted, 0} end
if st == 'open' then
  local opened = tonumber(redis.call('HGET', k, 'opened_at') or '0')
  if now < opened + cooldown then return {0, opened + cooldown} end
else
  local pu = tonumber(redis.call('HGET', k, 'probe_until') or '0')
  if now < pu then return {0, now + cooldown} end
end
redis.call('HSET', k, 'state', 'half_open', 'probe_until', now + lease)
return {1, now + cooldown}
`);

// ARGV: now, threshold, successes, trailing failures (after the last success), error, ttl.
// Returns {state, consecutive failures, failing_since or ''}.
const RECORD = redisScript(`
local k = KEYS[1]
local now, threshold, successes, trailing = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local st = redis.call('HGET', k, 'state') or 'closed'
local count
if successes > 0 then
  st = 'closed'
  redis.call('HSET', k, 'state', 'closed', 'failures', trailing, 'last_success_at', now)
  redis.call('HDEL', k, 'failing_since', 'opened_at', 'probe_until')
  count = trailing
else
  count = redis.call('HINCRBY', k, 'failures', trailing)
end
if trailing > 0 then
  redis.call('HSETNX', k, 'failing_since', now)
  redis.call('HSET', k, 'last_error', ARGV[5], 'last_error_at', now)
  if st == 'half_open' or (st == 'closed' and count >= threshold) then
    st = 'open'
    redis.call('HSET', k, 'state', 'open', 'opened_at', now)
    redis.call('HDEL', k, 'probe_until')
  end
end
redis.call('PEXPIRE', k, ARGV[6])
return {st, count, redis.call('HGET', k, 'failing_since') or ''}
`);

export interface BreakerOptions {
  prefix: string;
  threshold: number;
  cooldownMs: number;
  /** How long the health record outlives its last write. */
  ttlMs: number;
}

export interface BatchOutcome {
  successes: number;
  /** Failures after the last success of the batch (all of them when none succeeded). */
  trailingFailures: number;
  lastError: string;
}

export interface BreakerAfter {
  state: BreakerState;
  consecutiveFailures: number;
  failingSince: number | null;
}

/** A circuit breaker per destination whose state lives in Redis, shared by all replicas. */
export function createBreaker(redis: Redis, o: BreakerOptions) {
  return {
    /** How many of `wanted` sends may go now, and when the others should come back. */
    async admit(destinationId: string, wanted: number, probeLeaseMs: number, now = Date.now()): Promise<{ allowed: number; retryAt: number }> {
      const [allowed, retryAt] = (await ADMIT(redis, [destinationHealthKey(o.prefix, destinationId)], [now, o.cooldownMs, probeLeaseMs, wanted])) as [number, number];
      return { allowed, retryAt };
    },
    async record(destinationId: string, b: BatchOutcome, now = Date.now()): Promise<BreakerAfter> {
      const key = destinationHealthKey(o.prefix, destinationId);
      const [state, count, since] = (await RECORD(redis, [key], [now, o.threshold, b.successes, b.trailingFailures, b.lastError.slice(0, 300), o.ttlMs])) as [BreakerState, number, string];
      return { state, consecutiveFailures: count, failingSince: since ? Number(since) : null };
    },
  };
}

export type Breaker = ReturnType<typeof createBreaker>;
