import { actOnHealth, groupBy, summarize, type HealthDeps, type SendResult } from '@hookline/delivery';

/**
 * Feeds a batch's results into each destination's shared circuit, and disables a
 * destination that has been failing, with no success, for `disableAfterMs` (actOnHealth,
 * @hookline/delivery, which the edge path's reports use too).
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
    await actOnHealth(deps, destinationId, outcome, after, now);
  } catch (err) {
    deps.logger.warn('could not record destination health', { destination_id: destinationId, error: (err as Error).message });
  }
}
