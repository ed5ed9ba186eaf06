import type { Logger } from '@hookline/logger';
import type { Producer } from '@hookline/queues';

const CHUNK = 500;

export interface RequeueDeps {
  producer: Pick<Producer, 'add'>;
  logger: Logger;
}

/** The deliverer pool of a tenant (DEDICATED_POOLS), or null for the default `deliver` queue. */
export function poolOf(pools: ReadonlyMap<string, string> | undefined, tenantId: string): string | null {
  return pools?.get(tenantId) ?? null;
}

/**
 * Hands one tenant's due deliveries to the deliverer, on the queue of the tenant's pool
 * (`deliver.<pool>`, as the router does). PostgreSQL already says they are due, so when
 * Redis is unreachable the deliverer's recovery sweep finds them anyway: log, don't fail.
 */
export async function enqueueDeliveries(deps: RequeueDeps, deliveryIds: string[], pool: string | null): Promise<void> {
  for (let i = 0; i < deliveryIds.length; i += CHUNK) {
    try {
      await deps.producer.add('deliver', { v: 1, deliveryIds: deliveryIds.slice(i, i + CHUNK) }, { pool });
    } catch (err) {
      deps.logger.warn('deliver enqueue failed; recovery will pick the deliveries up', { count: deliveryIds.length, err: (err as Error).message });
      return;
    }
  }
}
