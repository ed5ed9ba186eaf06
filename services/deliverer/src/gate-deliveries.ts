import { groupBy, splitGated, takeRateTokens, type Breaker, type DestinationSettings, type GateAnswer, type Gated as GatedOf } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { ClaimedDelivery } from './claim-deliveries';

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

/** `allowed` go now; `deferred` (circuit open or over the rate limit) are due again after `delayMs`. */
export type Gated = GatedOf<Prepared>;

/**
 * Per destination, asks the shared circuit breaker and then the shared rate limit how
 * many of the claimed deliveries may go now. Those over a rate limit are spread over the
 * following one-second windows (splitGated, @hookline/delivery, which the edge path uses
 * too). If Redis cannot answer, everything goes (fail open): deliveries matter more than
 * protection. The destinations are asked at once: one after another, a chunk at fan-out 5
 * waited for five Redis round trips before its first request.
 */
export async function gateDeliveries(deps: GateDeps, items: Prepared[], now = Date.now()): Promise<Gated> {
  const gated = await Promise.all([...groupBy(items, (i) => i.d.destinationId)].map(([destinationId, group]) => gateDestination(deps, destinationId, group, now)));
  return { allowed: gated.flatMap((g) => g.allowed), deferred: gated.flatMap((g) => g.deferred) };
}

async function gateDestination(deps: GateDeps, destinationId: string, group: Prepared[], now: number): Promise<Gated> {
  const settings = group[0]!.settings;
  try {
    const breaker = await deps.breaker.admit(destinationId, group.length, settings.timeoutMs + 5_000, now);
    const limit = settings.rateLimitPerSecond;
    const answer: GateAnswer = { breaker, rate: limit !== null && breaker.allowed > 0 ? await takeRateTokens(deps.redis, deps.prefix, destinationId, limit, breaker.allowed, now) : null };
    return splitGated(group, answer, limit, now);
  } catch (err) {
    deps.logger.warn('destination gate unavailable, sending without it', { destination_id: destinationId, error: (err as Error).message });
    return { allowed: group, deferred: [] };
  }
}
