import { retryingDeadlocks, type Pool } from '@hookline/db';
import { publishConfigChange, type Redis } from '@hookline/queues';
import type { BatchOutcome, Breaker, BreakerAfter } from './circuit-breaker';
import { groupBy } from './destination-gate';
import { countsAgainstDestination, isSuccess, type SendResult } from './send-result';

/** What recording a destination's health needs (the logger is structural: any `warn`). */
export interface HealthDeps {
  pool: Pool;
  redis: Redis;
  prefix: string;
  breaker: Breaker;
  logger: { warn(msg: string, fields?: Record<string, unknown>): void };
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
 * Stops deliveries to a destination that has failed without a success for too long: it
 * becomes DISABLED with a visible reason, and its waiting deliveries stay where they are,
 * marked held in the same statement by the trigger on destinations.state (migration
 * 20261124000000_held_deliveries; re-enabling it sends them). The trigger locks them in
 * id order and can meet an outcome batch's locks: a deadlock victim is run again. True
 * when this call disabled it.
 */
export async function disableDestination(pool: Pool, redis: Redis, prefix: string, destinationId: string, reason: string): Promise<boolean> {
  const { rows } = await retryingDeadlocks(() =>
    pool.query<{ tenant_id: string }>(
      `UPDATE destinations SET state = 'DISABLED', disabled_reason = $2, updated_at = now()
       WHERE id = $1 AND state = 'ACTIVE' RETURNING tenant_id`,
      [destinationId, reason],
    ),
  );
  const row = rows[0];
  if (!row) return false;
  await publishConfigChange(redis, prefix, { kind: 'destination', id: destinationId, tenantId: row.tenant_id });
  return true;
}

/**
 * After a destination's circuit recorded `outcome`: says when it opened, and disables a
 * destination that has been failing, with no success, for `disableAfterMs`.
 */
export async function actOnHealth(deps: HealthDeps, destinationId: string, outcome: BatchOutcome, after: BreakerAfter, now: number): Promise<void> {
  if (after.state === 'open' && outcome.trailingFailures > 0) deps.logger.warn('destination circuit open', { destination_id: destinationId, consecutive_failures: after.consecutiveFailures });
  if (after.failingSince !== null && now - after.failingSince >= deps.disableAfterMs) {
    const hours = Math.round((now - after.failingSince) / 360_000) / 10;
    const reason = `failing without a success for ${hours} h (since ${new Date(after.failingSince).toISOString()}); last error ${outcome.lastError}`.slice(0, 500);
    if (await disableDestination(deps.pool, deps.redis, deps.prefix, destinationId, reason)) deps.logger.warn('destination disabled', { destination_id: destinationId, reason });
  }
}

/**
 * Feeds attempts into each destination's shared circuit, every destination in one script
 * call (one Redis round trip; the edge path's reports), then acts on what each circuit
 * says (actOnHealth). Never throws: the attempts are recorded already, and a circuit that
 * could not be told is logged.
 */
export async function recordHealthAtOnce(deps: HealthDeps, results: { destinationId: string; result: SendResult }[], now = Date.now()): Promise<void> {
  const outcomes = [...groupBy(results, (r) => r.destinationId)].flatMap(([destinationId, group]) => {
    const outcome = summarize(group.map((g) => g.result));
    return outcome ? [{ destinationId, outcome }] : [];
  });
  if (outcomes.length === 0) return;
  let afters: BreakerAfter[];
  try {
    afters = await deps.breaker.recordMany(outcomes, now);
  } catch (err) {
    deps.logger.warn('could not record destination health', { destinations: outcomes.length, error: (err as Error).message });
    return;
  }
  await Promise.all(
    outcomes.map(({ destinationId, outcome }, i) =>
      actOnHealth(deps, destinationId, outcome, afters[i]!, now).catch((err: Error) => deps.logger.warn('could not act on destination health', { destination_id: destinationId, error: err.message })),
    ),
  );
}
