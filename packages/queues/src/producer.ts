import { Queue } from 'bullmq';
import { QUEUES, type JobData, type QueueName } from './catalog';
import type { Redis } from './redis';

export interface Producer {
  add<Q extends QueueName>(queue: Q, data: JobData[Q], opts?: { delayMs?: number; jobId?: string }): Promise<void>;
  queue(name: QueueName): Queue;
  close(): Promise<void>;
}

export function createProducer(connection: Redis, prefix: string): Producer {
  const queues = new Map<QueueName, Queue>();
  const queue = (name: QueueName): Queue => {
    let q = queues.get(name);
    if (!q) {
      q = new Queue(QUEUES[name].name, { connection, prefix, defaultJobOptions: QUEUES[name].options });
      q.on('error', () => undefined);
      queues.set(name, q);
    }
    return q;
  };
  return {
    async add(name, data, opts = {}) {
      await queue(name).add(name, data, { delay: opts.delayMs, jobId: opts.jobId });
    },
    queue,
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
