import { Worker, type Job } from 'bullmq';
import { poolQueueName, type JobData, type QueueName } from './catalog';
import { assertClusterPrefix, type Redis } from './redis';

export interface WorkerHandle {
  worker: Worker;
  close(): Promise<void>;
  /**
   * Graceful stop with a deadline: takes no new job and waits up to `deadlineMs` for the
   * jobs in progress. Jobs still running then are given back to the wait list (another
   * worker, or this one restarted, runs them again: at-least-once), after `beforeRequeue`
   * had a chance to release what they hold. Resolves to the number of jobs given back.
   */
  drain(deadlineMs: number, beforeRequeue?: (jobs: Job[]) => Promise<void>): Promise<number>;
}

/** A BullMQ worker for one catalog queue (or one pool's copy of it); `handler` gets the typed payload. */
export function createWorker<Q extends QueueName>(
  name: Q,
  connection: Redis,
  prefix: string,
  concurrency: number,
  handler: (data: JobData[Q], job: Job) => Promise<void>,
  onError: (err: Error) => void,
  opts: { pool?: string | null } = {},
): WorkerHandle {
  assertClusterPrefix(connection, prefix);
  const active = new Map<Job, string | undefined>();
  const run = async (job: Job, token?: string): Promise<void> => {
    active.set(job, token);
    try {
      await handler(job.data as JobData[Q], job);
    } finally {
      active.delete(job);
    }
  };
  const worker = new Worker(poolQueueName(name, opts.pool), run, {
    connection,
    prefix,
    concurrency,
    // Lock renewals keep long HTTP batches owned; stalled jobs are retried by BullMQ.
    lockDuration: 60_000,
    maxStalledCount: 5,
  });
  worker.on('error', onError);
  return {
    worker,
    async close() {
      await worker.close();
    },
    async drain(deadlineMs, beforeRequeue) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs)));
      const finished = await Promise.race([worker.pause(false).then(() => true as const), deadline]);
      clearTimeout(timer);
      if (finished) {
        await worker.close();
        return 0;
      }
      const held = [...active.entries()];
      await beforeRequeue?.(held.map(([job]) => job));
      await Promise.all(held.map(([job, token]) => job.moveToWait(token).catch(onError)));
      await worker.close(true);
      return held.length;
    },
  };
}
