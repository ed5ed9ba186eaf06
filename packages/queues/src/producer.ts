import { Queue } from 'bullmq';
import { poolQueueName, QUEUES, type JobData, type QueueName } from './catalog';
import type { Redis } from './redis';

export interface Producer {
  /** `pool` sends the job to that pool's queue (`deliver.<pool>`, see catalog.ts) instead of the default one. */
  add<Q extends QueueName>(queue: Q, data: JobData[Q], opts?: { delayMs?: number; jobId?: string; pool?: string | null }): Promise<void>;
  queue(name: QueueName, pool?: string | null): Queue;
  close(): Promise<void>;
}

export function createProducer(connection: Redis, prefix: string): Producer {
  const queues = new Map<string, Queue>();
  const queue = (name: QueueName, pool?: string | null): Queue => {
    const full = poolQueueName(name, pool);
    let q = queues.get(full);
    if (!q) {
      q = new Queue(full, { connection, prefix, defaultJobOptions: QUEUES[name].options });
      q.on('error', () => undefined);
      queues.set(full, q);
    }
    return q;
  };
  return {
    async add(name, data, opts = {}) {
      await queue(name, opts.pool).add(name, data, { delay: opts.delayMs, jobId: opts.jobId });
    },
    queue,
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
