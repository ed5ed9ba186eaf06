import type { Pool } from '@hookline/db';
import { countsAgainstDestination, isSuccess, type SendResult } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { Breaker, BatchOutcome } from './circuit-breaker';
import { disableDestination } from './disable-destination';
import { groupBy } from './gate-deliveries';

export interface HealthDeps {
  pool: Pool;
  redis: Redis;
  prefix: string;
  breaker: Breaker;
  logger: Logger;
  disableAfterMs: number;
}

/** Successes and the failures after the last success, in order of completion. */
export function summarize(results: SendResult[]): BatchOutcome | null {
  const counted = results.filter((r) => isSuccess(r) || countsAgainstDestination(r)).sort((a, b) => a.startedAt.getTime() + a.durationMs - (b.startedAt.getTime() + b.durationMs));
  if (counted.length === 0) return null;
  let successes = 0;
  let trailing = 0;
  let lastError = '';
  for (const r of counted) {
    if (isSuccess(r)) {
      successes++;
      trailing = 0;
    } else {
      trailing++;
      lastError = `${r.errorKind ?? 'error'}: ${r.error ?? ''}`;
    }
  }
  return { successes, trailingFailures: trailing, lastError };
}

/**
 * Feeds a batch's results into each destination's shared circuit, and disables a
 * destination that has been failing, with no success, for `disableAfterMs`.
 */
export async function recordHealth(deps: HealthDeps, results: { destinationId: string; result: SendResult }[], now = Date.now()): Promise<void> {
  // All destinations at once, as the gate asks them.
  await Promise.all([...groupBy(results, (r) => r.destinationId)].map(([destinationId, group]) => recordDestination(deps, destinationId, group, now)));
}

async function recordDestination(deps: HealthDeps, destinationId: string, group: { result: SendResult }[], now: number): Promise<void> {
  const outcome = summarize(group.map((g) => g.result));
  if (!outcome) return;
  try {
    const after = await deps.breaker.record(destinationId, outcome, now);
    if (after.state === 'open' && outcome.trailingFailures > 0) deps.logger.warn('destination circuit open', { destination_id: destinationId, consecutive_failures: after.consecutiveFailures });
    if (after.failingSince !== null && now - after.failingSince >= deps.disableAfterMs) {
      const hours = Math.round((now - after.failingSince) / 360_000) / 10;
      const reason = `failing without a success for ${hours} h (since ${new Date(after.failingSince).toISOString()}); last error ${outcome.lastError}`.slice(0, 500);
      if (await disableDestination(deps.pool, deps.redis, deps.prefix, destinationId, reason)) deps.logger.warn('destination disabled', { destination_id: destinationId, reason });
    }
  } catch (err) {
    deps.logger.warn('could not record destination health', { destination_id: destinationId, error: (err as Error).message });
  }
}
