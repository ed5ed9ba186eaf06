import type { JobsOptions } from 'bullmq';

/**
 * The queue catalog: the only contract between the stages. Each entry names the queue
 * (never rename one: jobs in flight would be orphaned), the job payload and the default
 * options. Payloads carry ids and a version, never secrets or bodies. A job carries a
 * micro-batch of ids so that the per-job cost of BullMQ is paid once per batch.
 */
export const QUEUES = {
  /** ingest -> router: events committed in PostgreSQL, waiting for fan-out. */
  route: {
    name: 'route',
    options: { attempts: 8, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: true, removeOnFail: 1000 } satisfies JobsOptions,
  },
  /** router / api / recovery -> deliverer: deliveries due to be sent. */
  deliver: {
    name: 'deliver',
    options: { attempts: 8, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: true, removeOnFail: 1000 } satisfies JobsOptions,
  },
} as const;

export type QueueName = keyof typeof QUEUES;

/**
 * Worker pools: a catalog queue may be split into `<name>.<pool>` queues (same payload and
 * options) so that an operator can run workers dedicated to some tenants. `deliver` is the
 * default pool's queue; `deliver.acme` is pool `acme`'s. A pool name never contains a dot
 * or a colon (BullMQ refuses colons), see `POOL_NAME`.
 */
export const POOL_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;

export function poolQueueName(name: QueueName, pool?: string | null): string {
  return pool ? `${QUEUES[name].name}.${pool}` : QUEUES[name].name;
}

/** `deliver` for the default pool, `deliver.<pool>` for a dedicated one. */
export function deliverQueueName(pool?: string | null): string {
  return poolQueueName('deliver', pool);
}

export interface JobData {
  route: { v: 1; eventIds: string[]; traceparent?: string };
  deliver: { v: 1; deliveryIds: string[]; traceparent?: string };
}
