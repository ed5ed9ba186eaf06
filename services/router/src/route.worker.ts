import type { JobData } from '@hookline/queues';
import type { Logger } from '@hookline/logger';
import { routeEvents, type RouteDeps } from './route-events';

/** The `route` job adapter: checks the payload, routes, logs one line per job. */
export function routeJobHandler(deps: RouteDeps) {
  return async (data: JobData['route'], job: { id?: string }): Promise<void> => {
    const log: Logger = deps.logger.child({ job_id: job.id, queue: 'route' });
    if (data?.v !== 1 || !Array.isArray(data.eventIds) || !data.eventIds.every((id) => typeof id === 'string')) {
      // Retrying a malformed job cannot help; drop it.
      log.error('dropping malformed route job', { v: (data as { v?: unknown } | undefined)?.v });
      return;
    }
    const out = await routeEvents(deps, { eventIds: data.eventIds, traceparent: data.traceparent });
    log.debug('routed events', { routed: out.routed, skipped: out.skipped, unmatched: out.unmatched, deliveries: out.deliveryIds.length, traceparent: data.traceparent });
  };
}
