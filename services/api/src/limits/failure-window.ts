import { randomUUID } from 'node:crypto';
import type { Redis } from '@hookline/queues';

/**
 * Sliding-window counters of failed attempts in Redis (shared by every api replica), one
 * sorted set per key: a member per attempt, scored with Redis's clock. An attempt is
 * admitted only when every key is under its limit, and is then counted on all of them at
 * once, before the credential is checked: concurrent guesses cannot slip past the limit.
 * The caller takes back what turns out not to be a failure (`settleAttempt`).
 *
 * KEYS: the counters. ARGV: window ms, attempt id, then one limit per key.
 * Returns 0 (admitted, counted) or the ms until every key is under its limit again.
 * The keys must share a hash slot under Redis Cluster (QUEUE_PREFIX's `{…}` tag does that).
 */
const SCRIPT = `
local window = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[i + 2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local n = redis.call('ZCARD', key)
  if n >= limit then
    local oldest = redis.call('ZRANGE', key, n - limit, n - limit, 'WITHSCORES')
    wait = math.max(wait, tonumber(oldest[2]) + window - now)
  end
end
if wait > 0 then return wait end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[2])
  redis.call('PEXPIRE', key, window)
end
return 0
`;

export interface FailureLimit {
  key: string;
  max: number;
}

/** An admitted attempt: counted as a failure on `keys` until settled otherwise. */
export interface Attempt {
  id: string;
  keys: readonly string[];
}

export type Admission = { admitted: true; attempt: Attempt } | { admitted: false; retryAfterMs: number };

type WithScript = Redis & { hooklineFailureWindow?: (...args: (string | number)[]) => Promise<number> };

export async function admitAttempt(redis: Redis, limits: readonly FailureLimit[], windowMs: number): Promise<Admission> {
  const r = redis as WithScript;
  if (!r.hooklineFailureWindow) r.defineCommand('hooklineFailureWindow', { lua: SCRIPT });
  // A random id, never the caller's request id: a repeated member would count once.
  const id = randomUUID();
  const keys = limits.map((l) => l.key);
  const wait = await r.hooklineFailureWindow!(keys.length, ...keys, windowMs, id, ...limits.map((l) => l.max));
  return wait > 0 ? { admitted: false, retryAfterMs: wait } : { admitted: true, attempt: { id, keys } };
}

/** Takes the attempt back from `uncount` and clears `reset` entirely. */
export async function settleAttempt(redis: Redis, attempt: Attempt, change: { uncount: readonly string[]; reset?: readonly string[] }): Promise<void> {
  const tx = redis.multi();
  for (const key of change.uncount) tx.zrem(key, attempt.id);
  for (const key of change.reset ?? []) tx.del(key);
  await tx.exec();
}
