import { destinationHealthKey, type BreakerState, type Redis } from '@hookline/queues';
import { rateWindow, REFUND_LUA, SPEND_LUA, TAKE_LUA } from './rate-limiter';
import { groupBy } from './destination-gate';
import { redisScript } from './redis-script';

// The state of each destination's circuit lives in Redis (key layout in
// packages/queues/src/destination-state.ts), so every deliverer replica and the api's edge
// endpoints share one circuit per destination, whichever path sends. The logic is written
// once, as Lua functions, and called by the per-destination scripts the deliverer uses and
// by the several-destinations-at-once scripts of the edge path.

// Closed: everything passes. Open: nothing passes until the cooldown ends; then one caller
// gets the single probe (half-open) for `lease` ms (a lost probe is replaced after that);
// the rest come back a cooldown later. Returns allowed, retry_at_ms.
// The probe slot records which delivery holds it (`probe_holder`: the delivery id the edge
// path passes as `holder`; none for the deliverer, which never gives its probe back
// unsent: the probe is not asked the circuit nor a rate token again in its send slot,
// services/deliverer gate-deliveries.ts), so that only that delivery, given back unsent,
// frees it (GIVE_BACK).
const ADMIT_LUA = `
local function admit(k, now, cooldown, lease, wanted, holder)
  local st = redis.call('HGET', k, 'state')
  if st ~= 'open' and st ~= 'half_open' then return wanted, 0 end
  if st == 'open' then
    local opened = tonumber(redis.call('HGET', k, 'opened_at') or '0')
    if now < opened + cooldown then return 0, opened + cooldown end
  else
    local pu = tonumber(redis.call('HGET', k, 'probe_until') or '0')
    if now < pu then return 0, now + cooldown end
  end
  redis.call('HSET', k, 'state', 'half_open', 'probe_until', now + lease)
  if holder ~= nil and holder ~= '' then redis.call('HSET', k, 'probe_holder', holder) else redis.call('HDEL', k, 'probe_holder') end
  return 1, now + cooldown
end
`;

// now, threshold, successes, trailing failures (after the last success), error, ttl.
// Returns {state, consecutive failures, failing_since or '', opened_at or ''}.
const RECORD_LUA = `
local function record(k, now, threshold, successes, trailing, err, ttl)
  local st = redis.call('HGET', k, 'state') or 'closed'
  local count
  if successes > 0 then
    st = 'closed'
    redis.call('HSET', k, 'state', 'closed', 'failures', trailing, 'last_success_at', now)
    redis.call('HDEL', k, 'failing_since', 'opened_at', 'probe_until', 'probe_holder')
    count = trailing
  else
    count = redis.call('HINCRBY', k, 'failures', trailing)
  end
  if trailing > 0 then
    redis.call('HSETNX', k, 'failing_since', now)
    redis.call('HSET', k, 'last_error', err, 'last_error_at', now)
    if st == 'half_open' or (st == 'closed' and count >= threshold) then
      st = 'open'
      redis.call('HSET', k, 'state', 'open', 'opened_at', now)
      redis.call('HDEL', k, 'probe_until', 'probe_holder')
    end
  end
  redis.call('PEXPIRE', k, ttl)
  return {st, count, redis.call('HGET', k, 'failing_since') or '', redis.call('HGET', k, 'opened_at') or ''}
end
`;

// ARGV: now, cooldown, probe lease, wanted, probe holder ('' for none).
const ADMIT = redisScript(`${ADMIT_LUA}
local allowed, retry = admit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5])
return {allowed, retry}
`);

// ARGV: now, threshold, successes, trailing failures, error, ttl.
const RECORD = redisScript(`${RECORD_LUA}
return record(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6])
`);

// Several destinations in one call: per destination the circuit, then the rate limit for
// what the circuit let through (as the deliverer asks them one after the other). What the
// lease owner took from each window is noted beside it, so that what it gives back unsent
// can return its tokens (GIVE_BACK).
// KEYS: per destination its health key, its rate-window key, the window's spent note.
// ARGV: now, cooldown, lease owner ('' for none), then per destination: wanted, probe
// lease, rate limit (0: none), probe holder ('' for none).
// Returns per destination {allowed by the circuit, retry_at_ms, allowed by both}.
const GATE_MANY = redisScript(`${ADMIT_LUA}${TAKE_LUA}${SPEND_LUA}
local now, cooldown, owner = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local out = {}
for i = 1, #KEYS / 3 do
  local a = 4 + (i - 1) * 4
  local wanted, lease, limit = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local allowed, retry = admit(KEYS[3 * i - 2], now, cooldown, lease, wanted, ARGV[a + 3])
  local pass = allowed
  if limit > 0 and allowed > 0 then
    pass = take(KEYS[3 * i - 1], limit, allowed)
    spent(KEYS[3 * i], owner, pass)
  end
  out[i] = {allowed, retry, pass}
end
return out
`);

// KEYS: health keys. ARGV: now, threshold, ttl, then per destination: successes, trailing
// failures, error. Returns per destination what RECORD returns.
const RECORD_MANY = redisScript(`${RECORD_LUA}
local out = {}
for i = 1, #KEYS do
  local a = 4 + (i - 1) * 3
  out[i] = record(KEYS[i], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[3])
end
return out
`);

// Deliveries given back unsent (edge leases released, or refused before sending), in one
// call:
// - rate tokens: per (destination, lease owner), up to as many tokens as it gives back are
//   returned to the destination's current window, out of what that lease owner took from
//   that window (REFUND_LUA): none for tokens taken in an earlier window.
// - probe slots: a half-open circuit's probe slot is freed when the delivery that holds it
//   (`probe_holder`) is given back, so the next caller may send a probe at once rather
//   than after the probe's lease; never for another delivery of that destination (another
//   probe is out), nor once the circuit is no longer half-open (a probe reported in the
//   meantime has closed or reopened it).
// KEYS: per refund the window's counter and spent note, then per delivery its health key.
// ARGV: the number of refunds, then per refund: lease owner, count; then per delivery its id.
// Returns {probe slots freed, tokens returned}.
const GIVE_BACK = redisScript(`${REFUND_LUA}
local refunds = tonumber(ARGV[1])
local tokens, freed = 0, 0
for i = 1, refunds do
  tokens = tokens + refund(KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i], tonumber(ARGV[2 * i + 1]))
end
for j = 2 * refunds + 1, #KEYS do
  local k, id = KEYS[j], ARGV[j + 1]
  if redis.call('HGET', k, 'state') == 'half_open' and redis.call('HGET', k, 'probe_holder') == id then
    redis.call('HDEL', k, 'probe_until', 'probe_holder')
    freed = freed + 1
  end
end
return {freed, tokens}
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
  /** When the circuit last opened (ms epoch); null unless it is open. */
  openedAt: number | null;
}

/** One destination's question to the gate: its circuit, then its rate limit. */
export interface GateRequest {
  destinationId: string;
  wanted: number;
  /** How long a half-open probe counts as in flight (its lease). */
  probeLeaseMs: number;
  rateLimitPerSecond: number | null;
  /** The delivery that takes the probe slot, should the circuit let a probe through (edge path). */
  probeHolder?: string;
}

/** A delivery given back unsent: its lease (`leaseOwner`) is dropped, nothing was sent. */
export interface GivenBack {
  destinationId: string;
  deliveryId: string;
  leaseOwner: string;
}

/** What `admit` and `takeRateTokens` would have answered, asked one after the other. */
export interface GateAnswer {
  breaker: { allowed: number; retryAt: number };
  /** Null when the destination has no rate limit or the circuit let nothing through. */
  rate: { allowed: number; nextWindowAt: number } | null;
}

/** A circuit breaker per destination whose state lives in Redis, shared by all replicas. */
export function createBreaker(redis: Redis, o: BreakerOptions) {
  return {
    /** How many of `wanted` sends may go now, and when the others should come back. */
    async admit(destinationId: string, wanted: number, probeLeaseMs: number, now = Date.now(), probeHolder = ''): Promise<{ allowed: number; retryAt: number }> {
      const [allowed, retryAt] = (await ADMIT(redis, [destinationHealthKey(o.prefix, destinationId)], [now, o.cooldownMs, probeLeaseMs, wanted, probeHolder])) as [number, number];
      return { allowed, retryAt };
    },
    async record(destinationId: string, b: BatchOutcome, now = Date.now()): Promise<BreakerAfter> {
      const key = destinationHealthKey(o.prefix, destinationId);
      return after((await RECORD(redis, [key], [now, o.threshold, b.successes, b.trailingFailures, b.lastError.slice(0, 300), o.ttlMs])) as RecordReply);
    },
    /**
     * `admit`, then `takeRateTokens` for what the circuit let through, for several
     * destinations in one script call: one Redis round trip for a whole batch (the edge
     * path's work polls). All keys share the queue prefix, whose `{hash tag}` puts them in
     * one slot on Redis Cluster. With a `leaseOwner`, the tokens it takes are noted per
     * window so that `giveBack` can return them.
     */
    async gateMany(requests: GateRequest[], now = Date.now(), leaseOwner = ''): Promise<GateAnswer[]> {
      if (requests.length === 0) return [];
      const windows = requests.map((r) => rateWindow(o.prefix, r.destinationId, now));
      const keys = requests.flatMap((r, i) => [destinationHealthKey(o.prefix, r.destinationId), windows[i]!.key, windows[i]!.spentKey]);
      const args = requests.flatMap((r) => [r.wanted, r.probeLeaseMs, r.rateLimitPerSecond ?? 0, r.probeHolder ?? '']);
      const replies = (await GATE_MANY(redis, keys, [now, o.cooldownMs, leaseOwner, ...args])) as [number, number, number][];
      return requests.map((r, i) => {
        const [allowed, retryAt, passed] = replies[i]!;
        const rate = r.rateLimitPerSecond !== null && allowed > 0 ? { allowed: passed, nextWindowAt: windows[i]!.nextWindowAt } : null;
        return { breaker: { allowed, retryAt }, rate };
      });
    },
    /** `record` for several destinations in one script call (one round trip). */
    async recordMany(outcomes: { destinationId: string; outcome: BatchOutcome }[], now = Date.now()): Promise<BreakerAfter[]> {
      if (outcomes.length === 0) return [];
      const keys = outcomes.map((x) => destinationHealthKey(o.prefix, x.destinationId));
      const args = outcomes.flatMap(({ outcome: b }) => [b.successes, b.trailingFailures, b.lastError.slice(0, 300)]);
      const replies = (await RECORD_MANY(redis, keys, [now, o.threshold, o.ttlMs, ...args])) as RecordReply[];
      return replies.map(after);
    },
    /**
     * Deliveries given back unsent, in one script call (one round trip per batch): returns
     * to each destination's window current at `now` the tokens their lease owners took from
     * it (tokens taken in an earlier window are not returned: see REFUND_LUA), and frees the
     * probe slot of a half-open circuit whose probe (the delivery holding the slot) is among
     * them; the next admit lets a probe through at once. Not used by the deliverer.
     */
    async giveBack(items: GivenBack[], now = Date.now()): Promise<{ probesFreed: number; tokensReturned: number }> {
      if (items.length === 0) return { probesFreed: 0, tokensReturned: 0 };
      const refunds = [...groupBy(items, (i) => `${i.destinationId}\u0000${i.leaseOwner}`).values()].map((g) => ({ window: rateWindow(o.prefix, g[0]!.destinationId, now), owner: g[0]!.leaseOwner, count: g.length }));
      const probes = [...new Map(items.map((i) => [`${i.destinationId}\u0000${i.deliveryId}`, i] as const)).values()];
      const keys = [...refunds.flatMap((r) => [r.window.key, r.window.spentKey]), ...probes.map((p) => destinationHealthKey(o.prefix, p.destinationId))];
      const args = [refunds.length, ...refunds.flatMap((r) => [r.owner, r.count]), ...probes.map((p) => p.deliveryId)];
      const [probesFreed, tokensReturned] = (await GIVE_BACK(redis, keys, args)) as [number, number];
      return { probesFreed, tokensReturned };
    },
  };
}

type RecordReply = [BreakerState, number, string, string];

function after([state, count, since, opened]: RecordReply): BreakerAfter {
  return { state, consecutiveFailures: count, failingSince: since ? Number(since) : null, openedAt: state === 'open' && opened ? Number(opened) : null };
}

export type Breaker = ReturnType<typeof createBreaker>;
