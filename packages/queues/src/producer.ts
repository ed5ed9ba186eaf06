import { Queue } from 'bullmq';
import { poolQueueName, QUEUES, type JobData, type QueueName } from './catalog';
import { assertClusterPrefix, redisReady, type Redis } from './redis';

export interface Producer {
  /**
   * `pool` sends the job to that pool's queue (`deliver.<pool>`, see catalog.ts) instead of
   * the default one. Rejects when Redis is not connected within `readyTimeoutMs`.
   */
  add<Q extends QueueName>(queue: Q, data: JobData[Q], opts?: { delayMs?: number; jobId?: string; pool?: string | null }): Promise<void>;
  queue(name: QueueName, pool?: string | null): Queue;
  close(): Promise<void>;
}

export interface ProducerOptions {
  /** How long `add` waits for a connection that is not up (yet) before it rejects. */
  readyTimeoutMs?: number;
}

export function createProducer(connection: Redis, prefix: string, opts: ProducerOptions = {}): Producer {
  assertClusterPrefix(connection, prefix);
  const readyTimeoutMs = opts.readyTimeoutMs ?? 2000;
  const queues = new Map<string, Queue>();
  const queue = (name: QueueName, pool?: string | null): Queue => {
    const full = poolQueueName(name, pool);
    let q = queues.get(full);
    if (!q) {
      const made = new Queue(full, { connection, prefix, defaultJobOptions: QUEUES[name].options });
      made.on('error', () => undefined);
      // A queue whose setup failed (its first commands timed out on a stalled Redis, or the
      // connection dropped under them) refuses every later call with that error, even once
      // Redis answers again: forget it, so that the next call makes a new one.
      made.waitUntilReady().catch(() => {
        if (queues.get(full) === made) queues.delete(full);
        made.close().catch(() => undefined);
      });
      queues.set(full, made);
      q = made;
    }
    return q;
  };
  return {
    async add(name, data, o = {}) {
      // BullMQ waits for a connection without limit (a queue's first use waits for 'ready',
      // whether Redis never answered or is down now); a producer fails fast instead, so that
      // its caller can answer or leave the work to a recovery sweep.
      if (connection.status !== 'ready' && !(await redisReady(connection, readyTimeoutMs))) {
        throw new Error(`Redis is not connected (${connection.status}); ${poolQueueName(name, o.pool)} job not added`);
      }
      await queue(name, o.pool).add(name, data, { delay: o.delayMs, jobId: o.jobId });
    },
    queue,
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
