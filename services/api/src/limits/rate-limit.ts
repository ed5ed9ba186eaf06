import type { Response } from 'express';
import { AppError } from '@hookline/errors';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { RateLimit } from '../config';

/**
 * Token buckets in Redis, so every api replica shares them: `burst` tokens, refilled at
 * `perMinute` per minute. Redis's own clock is used, so replicas with skewed clocks agree.
 *
 * One call checks every bucket a request draws on (the tenant's, and an MCP key's) at once:
 * `cost` tokens are taken from all of them only when each has them, otherwise from none, so
 * a refusal by one bucket never spends another's. The buckets' keys share QUEUE_PREFIX, so
 * on Redis Cluster its `{hash tag}` puts them in one slot, as a multi-key script needs.
 *
 * KEYS: the buckets. ARGV: cost, then per bucket its per-minute rate and burst.
 * Returns [allowed 0|1, then per bucket: tokens left (floor), ms until it has the cost
 * (0 when it has; counted up to its burst), 1 when it lacks the cost].
 */
const SCRIPT = `
local cost = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tokens, rates, bursts = {}, {}, {}
local allowed = 1
for i = 1, #KEYS do
  rates[i] = tonumber(ARGV[2 * i]) / 60000
  bursts[i] = tonumber(ARGV[2 * i + 1])
  local data = redis.call('HMGET', KEYS[i], 'tokens', 'ts')
  local held = tonumber(data[1]) or bursts[i]
  local ts = tonumber(data[2]) or now
  tokens[i] = math.min(bursts[i], held + math.max(0, now - ts) * rates[i])
  if tokens[i] < cost then allowed = 0 end
end
local out = { allowed }
for i = 1, #KEYS do
  local wait = 0
  local short = 0
  if allowed == 1 then
    tokens[i] = tokens[i] - cost
  elseif tokens[i] < cost then
    short = 1
    wait = math.ceil((math.max(math.min(cost, bursts[i]) - tokens[i], 0)) / rates[i])
  end
  redis.call('HSET', KEYS[i], 'tokens', tostring(tokens[i]), 'ts', now)
  redis.call('PEXPIRE', KEYS[i], math.ceil(bursts[i] / rates[i]) + 1000)
  out[#out + 1] = math.floor(tokens[i])
  out[#out + 1] = wait
  out[#out + 1] = short
end
return out
`;

/** Which budget a bucket is: named in `X-RateLimit-Scope` and in a refusal's detail. */
export type RateScope = 'tenant' | 'mcp_key';

export interface RateBucket {
  scope: RateScope;
  /** Its Redis key (rateLimitKey, mcpKeyRateLimitKey). */
  key: string;
  limit: RateLimit;
}

export interface BucketDecision {
  bucket: RateBucket;
  /** Tokens left after this request (floor); unchanged when it was refused. */
  remaining: number;
  /** Whether this bucket lacked the cost (one that did refuses the request). */
  short: boolean;
  /** ms until this bucket has the cost again; 0 when it had it. */
  retryAfterMs: number;
}

export interface RateDecision {
  allowed: boolean;
  buckets: BucketDecision[];
}

type WithLimiter = Redis & { hooklineRateLimit?: (...args: (string | number)[]) => Promise<number[]> };

/** Takes `cost` tokens from every bucket, or from none when one of them lacks them. */
export async function takeTokens(redis: Redis, buckets: readonly RateBucket[], cost = 1): Promise<RateDecision> {
  const r = redis as WithLimiter;
  // numberOfKeys is given with each call: the first argument (as ioredis's own commands do).
  if (!r.hooklineRateLimit) r.defineCommand('hooklineRateLimit', { lua: SCRIPT });
  const out = await r.hooklineRateLimit!(buckets.length, ...buckets.map((b) => b.key), cost, ...buckets.flatMap((b) => [b.limit.perMinute, b.limit.burst]));
  return {
    allowed: out[0] === 1,
    buckets: buckets.map((bucket, i) => ({ bucket, remaining: out[1 + 3 * i]!, retryAfterMs: out[2 + 3 * i]!, short: out[3 + 3 * i] === 1 })),
  };
}

export function rateLimitKey(prefix: string, tenantId: string): string {
  return `${prefix}:ratelimit:${tenantId}`;
}

/** An MCP key's own bucket (its id is `key_…`, so it never meets a tenant's). */
export function mcpKeyRateLimitKey(prefix: string, keyId: string): string {
  return `${prefix}:ratelimit:mcp_key:${keyId}`;
}

/**
 * The bucket the headers describe: when refused, the one that refused (the longest wait,
 * so Retry-After holds for every bucket); else the one with the fewest tokens left, on a
 * tie the one refilling slower, then the first listed (the tenant's).
 */
function binding(decision: RateDecision): BucketDecision {
  const pick = (list: BucketDecision[], better: (a: BucketDecision, b: BucketDecision) => boolean) => list.reduce((best, d) => (better(d, best) ? d : best));
  if (!decision.allowed) return pick(decision.buckets.filter((d) => d.short), (a, b) => a.retryAfterMs > b.retryAfterMs);
  return pick(decision.buckets, (a, b) => a.remaining < b.remaining || (a.remaining === b.remaining && a.bucket.limit.perMinute < b.bucket.limit.perMinute));
}

function refusal(d: BucketDecision, cost: number): string {
  const { perMinute, burst } = d.bucket.limit;
  const limit = d.bucket.scope === 'mcp_key' ? `Rate limit of this MCP key, ${perMinute} requests per minute (burst ${burst}),` : `Rate limit of ${perMinute} requests per minute (burst ${burst})`;
  const batch = cost > burst ? ` This batch has ${cost} tool calls, more than the burst: send at most ${burst} per batch.` : '';
  return `${limit} exceeded.${batch}`;
}

/**
 * Takes `cost` tokens (one per request; one per tool call of an MCP batch) from the tenant's
 * bucket and from every bucket in `also` (an MCP key's), all or none; sets `X-RateLimit-Limit`,
 * `X-RateLimit-Remaining` and `X-RateLimit-Scope` (`tenant` or `mcp_key`) for the bucket that
 * binds (see binding()), and throws 429 `rate-limit-exceeded` (`retry_after_seconds`,
 * `Retry-After`) when any bucket lacks the cost; nothing is taken then, from any bucket, so a
 * batch is admitted whole or not at all. Redis down: the API stays usable (fail open, no
 * headers); readiness reports Redis separately. The control API calls this with the tenant's
 * bucket only; the MCP surface adds the calling MCP key's.
 */
export async function enforceRateLimit(
  deps: { redis: Redis; logger: Logger; prefix: string },
  tenantId: string,
  limit: RateLimit,
  res: Response,
  opts: { cost?: number; also?: readonly RateBucket[] } = {},
): Promise<void> {
  const cost = Math.max(1, opts.cost ?? 1);
  const buckets: RateBucket[] = [{ scope: 'tenant', key: rateLimitKey(deps.prefix, tenantId), limit }, ...(opts.also ?? [])];
  let decision: RateDecision;
  try {
    decision = await takeTokens(deps.redis, buckets, cost);
  } catch (err) {
    deps.logger.warn('rate limiter unavailable', { err: (err as Error).message });
    return;
  }
  const shown = binding(decision);
  res.setHeader('X-RateLimit-Limit', String(shown.bucket.limit.perMinute));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, shown.remaining)));
  res.setHeader('X-RateLimit-Scope', shown.bucket.scope);
  if (!decision.allowed) {
    const seconds = Math.max(1, Math.ceil(shown.retryAfterMs / 1000));
    throw new AppError('rate-limit-exceeded', refusal(shown, cost), { retry_after_seconds: seconds }, { 'Retry-After': String(seconds) });
  }
}
