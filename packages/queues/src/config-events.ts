import type { Redis } from './redis';

/**
 * Configuration changes (ingesters, destinations, flows) are announced on one Redis
 * pub/sub channel so that ingest and router drop their caches at once; the caches also
 * expire on their own, so a missed message costs seconds, not correctness. Deliverers
 * listen too, for deletes that left open deliveries to their janitor (which also runs on
 * its own every JANITOR_INTERVAL_MS).
 */
export function configChannel(prefix: string): string {
  return `${prefix}:config-changed`;
}

export interface ConfigChange {
  kind: 'ingester' | 'destination' | 'flow' | 'tenant' | 'cluster';
  id: string;
  tenantId: string;
  /**
   * A delete that closed only DELETE_CLOSE_INLINE_LIMIT of the open deliveries and left the
   * rest to the deliverer's janitor: deliverers run their janitor at once on it.
   */
  openDeliveriesLeft?: boolean;
}

export async function publishConfigChange(redis: Redis, prefix: string, change: ConfigChange): Promise<void> {
  await redis.publish(configChannel(prefix), JSON.stringify(change)).catch(() => undefined);
}

/**
 * Subscribes on a dedicated connection (a subscribed connection can do nothing else).
 * Messages published while the connection was down are lost: `onReconnect` runs each time
 * it is back (ioredis subscribes again by itself), so that a cache can drop everything.
 */
export async function onConfigChange(subscriber: Redis, prefix: string, handler: (change: ConfigChange) => void, onReconnect?: () => void): Promise<void> {
  let subscribed = false;
  subscriber.on('ready', () => {
    if (subscribed) onReconnect?.();
  });
  subscriber.on('message', (channel: string, message: string) => {
    if (channel !== configChannel(prefix)) return;
    try {
      handler(JSON.parse(message) as ConfigChange);
    } catch {
      /* a malformed message is ignored; caches expire anyway */
    }
  });
  await subscriber.subscribe(configChannel(prefix));
  subscribed = true;
}
