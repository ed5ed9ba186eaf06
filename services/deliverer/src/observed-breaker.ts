import type { Breaker } from '@hookline/delivery';
import type { Metrics } from '@hookline/observability';
import { readDestinationHealthState, type BreakerState, type Redis } from '@hookline/queues';

const VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

export interface ObservedBreaker {
  breaker: Breaker;
  /** Re-reads the shared state of the circuits this process shows as not closed (another replica may have closed them). */
  refresh(): Promise<void>;
}

/**
 * Mirrors circuit states into hookline_breaker_state. Only destinations whose circuit is
 * not closed have a series (a closing circuit removes its series), which bounds the
 * label's cardinality to the destinations failing right now.
 */
export function observeBreaker(breaker: Breaker, metrics: Metrics, redis: Redis, prefix: string): ObservedBreaker {
  const shown = new Set<string>();
  const show = (destinationId: string, state: BreakerState): void => {
    if (state === 'closed') {
      if (shown.delete(destinationId)) metrics.breakerState.remove({ destination_id: destinationId });
      return;
    }
    shown.add(destinationId);
    metrics.breakerState.set({ destination_id: destinationId }, VALUE[state]);
  };
  return {
    breaker: {
      ...breaker,
      async record(destinationId, outcome, now) {
        const after = await breaker.record(destinationId, outcome, now);
        show(destinationId, after.state);
        return after;
      },
    },
    async refresh() {
      for (const id of [...shown]) show(id, (await readDestinationHealthState(redis, prefix, id)).state);
    },
  };
}
