import type { Logger } from '@hookline/logger';
import type { Metrics, Tracer } from '@hookline/observability';
import type { JobData } from '@hookline/queues';
import { deliverBatch, type DeliverDeps } from './deliver-batch';

export interface DeliverJobDeps {
  deps: DeliverDeps;
  metrics: Metrics;
  tracer: Tracer;
  logger: Logger;
}

const OUTCOMES = ['delivered', 'failed', 'exhausted'] as const;

/**
 * The `deliver` job adapter for one queue: a consumer span in the job's trace, the batch,
 * hookline_delivery_attempts_total by outcome, and one log line per job with its ids.
 */
export function deliverJobHandler(d: DeliverJobDeps, queue: string) {
  return async (data: JobData['deliver'], job: { id?: string }): Promise<void> => {
    const started = Date.now();
    const span = d.tracer.start('deliver', 'consumer', data.traceparent, { 'messaging.destination.name': queue, 'messaging.batch.message_count': data.deliveryIds?.length });
    const ids = { job_id: job.id, queue, trace_id: span.context.traceId, delivery_ids: data.deliveryIds };
    try {
      // The job's traceparent is the batch's; each outbound request is traced in its own
      // event's trace (from the event's correlation id), so it is not passed on.
      const summary = await deliverBatch(d.deps, { v: 1, deliveryIds: data.deliveryIds });
      for (const outcome of OUTCOMES) if (summary[outcome] > 0) d.metrics.deliveryAttempts.inc({ outcome }, summary[outcome]);
      span.end({ ...summary });
      d.logger.info('deliver job done', { ...ids, ...summary, duration_ms: Date.now() - started });
    } catch (err) {
      span.end({}, (err as Error).message);
      d.logger.warn('deliver job failed; BullMQ retries it', { ...ids, error: (err as Error).message });
      throw err;
    }
  };
}
