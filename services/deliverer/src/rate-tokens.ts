import { takeRateTokens } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';

/** After a send-slot rate token could not be taken, Redis is not asked for one for this long. */
const RATE_TOKENS_PAUSE_MS = 2_000;

export type RateAnswer = { allowed: number; nextWindowAt: number };

export interface RateTokens {
  /**
   * One token of the destination's current one-second window (`now`, ms epoch); null when
   * Redis could not give one, or failed to within the last RATE_TOKENS_PAUSE_MS: the request
   * goes (fail open).
   */
  take(destinationId: string, perSecond: number, now: number): Promise<RateAnswer | null>;
}

/**
 * `take` (one token), failing open: after a failure (Redis down, or stalled until
 * REDIS_COMMAND_TIMEOUT_MS) it is not called for `pauseMs`, so that a stalled Redis costs
 * the requests asking meanwhile one timeout in all, not one each.
 */
export function pausingRateTokens(take: (destinationId: string, perSecond: number, now: number) => Promise<RateAnswer>, logger: Logger, pauseMs = RATE_TOKENS_PAUSE_MS, clock: () => number = Date.now): RateTokens {
  let pausedUntil = 0;
  return {
    async take(destinationId, perSecond, now) {
      if (clock() < pausedUntil) return null;
      try {
        return await take(destinationId, perSecond, now);
      } catch (err) {
        pausedUntil = clock() + pauseMs;
        logger.warn('rate limit unavailable, sending without it', { destination_id: destinationId, paused_ms: pauseMs, error: (err as Error).message });
        return null;
      }
    },
  };
}

/** The deliverer's send-slot rate tokens: takeRateTokens (@hookline/delivery) on `redis`, pausing after a failure. */
export function redisRateTokens(redis: Redis, prefix: string, logger: Logger): RateTokens {
  return pausingRateTokens((destinationId, perSecond, now) => takeRateTokens(redis, prefix, destinationId, perSecond, 1, now), logger);
}
