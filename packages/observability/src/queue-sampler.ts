import type { Logger } from '@hookline/logger';
import type { Producer, QueueName } from '@hookline/queues';
import type { Metrics } from './metrics';

export interface SampledQueue {
  name: QueueName;
  /** A worker pool's copy of the queue (`deliver.<pool>`); null for the default one. */
  pool?: string | null;
}

export interface QueueSampler {
  /** One sample now (the timer calls this; tests too). */
  sample(): Promise<void>;
  stop(): Promise<void>;
}

const STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

/**
 * Every `intervalMs`, reads each queue's job counts and the age of its oldest waiting job
 * into `hookline_queue_depth` / `hookline_queue_oldest_waiting_age_seconds`. Sampling on a
 * timer keeps Redis round trips off the job path (a few commands per queue per interval).
 * A sample that fails counts in hookline_redis_errors_total{operation="queue_sample"} and
 * removes the failed queues' series (they are absent until a sample succeeds), so a Redis
 * outage does not leave the last values standing, as if nothing waited longer.
 */
export function startQueueSampler(deps: { producer: Producer; metrics: Metrics; logger: Logger }, queues: SampledQueue[], intervalMs: number): QueueSampler {
  let running: Promise<void> | null = null;
  let failing = false;

  async function sampleOne(q: SampledQueue): Promise<void> {
    const queue = deps.producer.queue(q.name, q.pool);
    const counts = await queue.getJobCounts(...STATES);
    for (const state of STATES) deps.metrics.queueDepth.set({ queue: queue.name, state }, counts[state] ?? 0);
    // BullMQ pushes new jobs on the left of the wait list: the oldest is its last element.
    const [oldest] = await queue.getJobs(['waiting'], 0, 0, true);
    const since = oldest ? oldest.timestamp + (oldest.delay ?? 0) : Date.now();
    deps.metrics.queueOldestAge.set({ queue: queue.name }, Math.max(0, Date.now() - since) / 1000);
  }

  /** A queue whose sample failed has no depth or age series until one succeeds: absent, not frozen. */
  function forget(q: SampledQueue): void {
    const name = deps.producer.queue(q.name, q.pool).name;
    for (const state of STATES) deps.metrics.queueDepth.remove({ queue: name, state });
    deps.metrics.queueOldestAge.remove({ queue: name });
  }

  const sample = (): Promise<void> => {
    running ??= Promise.allSettled(queues.map(sampleOne))
      .then((results) => {
        const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [{ queue: queues[i]!, err: r.reason as Error }] : []));
        if (failed.length === 0) {
          failing = false;
          return;
        }
        for (const f of failed) forget(f.queue);
        deps.metrics.redisErrors.inc({ operation: 'queue_sample' });
        if (!failing) deps.logger.warn('queue metrics sample failed', { error: failed[0]!.err?.message ?? String(failed[0]!.err) });
        failing = true;
      })
      .catch((err: Error) => {
        deps.logger.warn('queue metrics sample failed', { error: err.message });
      })
      .finally(() => (running = null));
    return running;
  };
  const timer = setInterval(() => void sample(), intervalMs);
  timer.unref();
  void sample();
  return {
    sample,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
