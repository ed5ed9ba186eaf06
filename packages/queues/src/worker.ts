import { Worker, type Job } from 'bullmq';
import { QUEUES, type JobData, type QueueName } from './catalog';
import type { Redis } from './redis';

export interface WorkerHandle {
  worker: Worker;
  close(): Promise<void>;
}

/** A BullMQ worker for one catalog queue; `handler` gets the typed payload. */
export function createWorker<Q extends QueueName>(
  name: Q,
  connection: Redis,
  prefix: string,
  concurrency: number,
  handler: (data: JobData[Q], job: Job) => Promise<void>,
  onError: (err: Error) => void,
): WorkerHandle {
  const worker = new Worker(QUEUES[name].name, (job: Job) => handler(job.data as JobData[Q], job), {
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
  };
}
