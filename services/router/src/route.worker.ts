import type { Logger } from '@hookline/logger';
import type { Tracer } from '@hookline/observability';
import type { JobData } from '@hookline/queues';
import { routeEvents, type RouteDeps } from './route-events';

/**
 * The `route` job adapter: checks the payload, routes inside a span of the job's trace
 * (whose traceparent the deliver jobs carry on), and logs one line per job with its ids.
 */
export function routeJobHandler(deps: RouteDeps & { tracer?: Tracer }) {
  return async (data: JobData['route'], job: { id?: string }): Promise<void> => {
    const log: Logger = deps.logger.child({ job_id: job.id, queue: 'route' });
    if (data?.v !== 1 || !Array.isArray(data.eventIds) || !data.eventIds.every((id) => typeof id === 'string')) {
      // Retrying a malformed job cannot help; drop it.
      log.error('dropping malformed route job', { v: (data as { v?: unknown } | undefined)?.v });
      return;
    }
    const started = Date.now();
    const span = deps.tracer?.start('route', 'consumer', data.traceparent, { 'messaging.destination.name': 'route', 'messaging.batch.message_count': data.eventIds.length });
    try {
      const out = await routeEvents(deps, { eventIds: data.eventIds, traceparent: span?.traceparent ?? data.traceparent });
      span?.end({ routed: out.routed, deliveries: out.deliveryIds.length });
      log.info('route job done', {
        trace_id: span?.context.traceId,
        event_ids: data.eventIds,
        routed: out.routed,
        skipped: out.skipped,
        unmatched: out.unmatched,
        deliveries: out.deliveryIds.length,
        held: out.held,
        deliver_queues: out.queues,
        duration_ms: Date.now() - started,
      });
    } catch (err) {
      span?.end({}, (err as Error).message);
      log.warn('route job failed; BullMQ retries it', { trace_id: span?.context.traceId, event_ids: data.eventIds, error: (err as Error).message });
      throw err;
    }
  };
}
