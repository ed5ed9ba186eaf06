import { onConfigChange, type Redis } from '@hookline/queues';
import type { Periodic } from './periodic';

/**
 * Runs the janitor at once when the api announces a delete that left open deliveries to
 * it (beyond DELETE_CLOSE_INLINE_LIMIT: `openDeliveriesLeft` on the config change), instead
 * of at its next JANITOR_INTERVAL_MS tick; the following batch runs come every interval
 * (createJanitor keeps going while batches come back full). On `subscriber`, a connection
 * of its own. An announcement missed while it was disconnected costs only that wait.
 */
export function wakeJanitorOnDeletes(subscriber: Redis, prefix: string, janitor: Pick<Periodic, 'kick'>): Promise<void> {
  return onConfigChange(subscriber, prefix, (change) => {
    if (change.openDeliveriesLeft === true) janitor.kick();
  });
}
