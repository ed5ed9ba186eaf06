import type { AppContext } from '../context';

const CHUNK = 500;

/**
 * Hands due deliveries to the deliverer. PostgreSQL already says they are due, so when
 * Redis is unreachable the deliverer's recovery sweep finds them anyway: log, don't fail.
 */
export async function enqueueDeliveries(app: AppContext, deliveryIds: string[]): Promise<void> {
  for (let i = 0; i < deliveryIds.length; i += CHUNK) {
    try {
      await app.producer.add('deliver', { v: 1, deliveryIds: deliveryIds.slice(i, i + CHUNK) });
    } catch (err) {
      app.logger.warn('deliver enqueue failed; recovery will pick the deliveries up', { count: deliveryIds.length, err: (err as Error).message });
      return;
    }
  }
}
