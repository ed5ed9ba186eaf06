import type { DestinationSettings } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { Breaker } from './circuit-breaker';
import type { ClaimedDelivery } from './claim-deliveries';
import { takeRateTokens } from './rate-limiter';

export interface Prepared {
  d: ClaimedDelivery;
  settings: DestinationSettings;
}

export interface GateDeps {
  redis: Redis;
  prefix: string;
  breaker: Breaker;
  logger: Logger;
}

export interface Gated {
  allowed: Prepared[];
  /** Not sent now (circuit open or over the rate limit): due again after `delayMs`. */
  deferred: { item: Prepared; delayMs: number }[];
}

export function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const i of items) {
    const k = key(i);
    const list = out.get(k);
    if (list) list.push(i);
    else out.set(k, [i]);
  }
  return out;
}

/**
 * Per destination, asks the shared circuit breaker and then the shared rate limit how
 * many of the claimed deliveries may go now. Those over a rate limit are spread over the
 * following one-second windows. If Redis cannot answer, everything goes (fail open):
 * deliveries matter more than protection. The destinations are asked at once: one after
 * another, a chunk at fan-out 5 waited for five Redis round trips before its first request.
 */
export async function gateDeliveries(deps: GateDeps, items: Prepared[], now = Date.now()): Promise<Gated> {
  const gated = await Promise.all([...groupBy(items, (i) => i.d.destinationId)].map(([destinationId, group]) => gateDestination(deps, destinationId, group, now)));
  return { allowed: gated.flatMap((g) => g.allowed), deferred: gated.flatMap((g) => g.deferred) };
}

async function gateDestination(deps: GateDeps, destinationId: string, group: Prepared[], now: number): Promise<Gated> {
  const settings = group[0]!.settings;
  try {
    const b = await deps.breaker.admit(destinationId, group.length, settings.timeoutMs + 5_000, now);
    const deferred = group.slice(b.allowed).map((item) => ({ item, delayMs: Math.max(0, b.retryAt - now) }));
    let pass = b.allowed;
    const limit = settings.rateLimitPerSecond;
    if (limit !== null && pass > 0) {
      const r = await takeRateTokens(deps.redis, deps.prefix, destinationId, limit, pass, now);
      group.slice(r.allowed, pass).forEach((item, k) => deferred.push({ item, delayMs: r.nextWindowAt - now + Math.floor(k / limit) * 1000 }));
      pass = r.allowed;
    }
    return { allowed: group.slice(0, pass), deferred };
  } catch (err) {
    deps.logger.warn('destination gate unavailable, sending without it', { destination_id: destinationId, error: (err as Error).message });
    return { allowed: group, deferred: [] };
  }
}
