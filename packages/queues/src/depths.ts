import type { Producer } from './producer';
import { QUEUES, type QueueName } from './catalog';

/** Waiting + delayed + active counts per queue, for health views and autoscaling. */
export async function queueDepths(producer: Producer): Promise<Record<QueueName, Record<string, number>>> {
  const out = {} as Record<QueueName, Record<string, number>>;
  for (const name of Object.keys(QUEUES) as QueueName[]) {
    out[name] = await producer.queue(name).getJobCounts('waiting', 'delayed', 'active', 'failed');
  }
  return out;
}
