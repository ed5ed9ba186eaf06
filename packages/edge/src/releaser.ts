import { edgePaths, MAX_RELEASES_PER_REQUEST, type ReleaseResponse, type WorkItem } from '@hookline/delivery/src/wire';
import type { Logger } from '@hookline/logger';
import { createBatchQueue } from './batch-queue';
import type { ServiceClient } from './service-client';

export interface Releaser {
  /**
   * Gives the leases of `items` back to the service (`POST …/releases`), so that their
   * deliveries go out again at once instead of when the leases expire. For deliveries not
   * sent, or abandoned before any answer: never for one that was sent (that one is
   * reported). Best effort, by `deadline` (ms epoch): one try; a release that fails or
   * cannot be made in time is logged and the lease just expires. Never rejects.
   */
  release(items: WorkItem[], deadline: number): Promise<void>;
}

interface Pending {
  item: WorkItem;
  deadline: number;
  done: () => void;
}

/**
 * Releases made in the same turn of the event loop, or while a release request is out,
 * travel together (up to MAX_RELEASES_PER_REQUEST per request): at a stop the sends cut
 * at the deadline end together.
 */
export function createReleaser(deps: { client: ServiceClient; clusterId: string; logger: Logger }): Releaser {
  const send = async (batch: Pending[]): Promise<void> => {
    const deadline = Math.min(...batch.map((p) => p.deadline));
    const left = deadline - Date.now();
    const ids = batch.map((p) => p.item.id);
    if (left <= 0) {
      deps.logger.warn('no time left to give leases back; they will expire', { delivery_ids: ids });
      return;
    }
    try {
      const res = await deps.client.post<ReleaseResponse>(
        edgePaths.releases(deps.clusterId),
        { releases: batch.map((p) => ({ delivery_id: p.item.id, lease_owner: p.item.lease_owner })) },
        { timeoutMs: left, signal: AbortSignal.timeout(left) },
      );
      const released = res.results.filter((r) => r.result === 'released').length;
      deps.logger.info('gave leases back unsent: the deliveries can go out again at once', { released, ignored: res.results.length - released, delivery_ids: ids });
    } catch (err) {
      deps.logger.warn('could not give leases back; they will expire', { delivery_ids: ids, error: (err as Error).message });
    }
  };

  // One turn later: the sends a stop cuts all end in it.
  const batches = createBatchQueue<Pending>(() => MAX_RELEASES_PER_REQUEST, send, () => new Promise((r) => setImmediate(r)));

  return {
    release(items, deadline) {
      if (items.length === 0) return Promise.resolve();
      return new Promise((resolve) => {
        let left = items.length;
        const done = (): void => {
          if (--left === 0) resolve();
        };
        batches.push(...items.map((item) => ({ item, deadline, done })));
      });
    },
  };
}
