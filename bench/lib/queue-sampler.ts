// BullMQ job counts of the route and deliver queues under the run's prefix, once a second,
// and of each worker pool's deliver queue (`deliver.<pool>`) the run's config names
// (DEDICATED_POOLS for the router, DELIVER_QUEUES for the deliverer). These are jobs, each
// a batch of ids: Hookline's backlog in events and deliveries is in PostgreSQL
// (backlog-sampler.ts).
import { createProducer, createRedis, deliverQueueName, parseDedicatedPools, parseDeliverQueues, queueDepths, type Producer, type Redis } from '@hookline/queues';

export interface QueueSample {
  t: number;
  route: Record<string, number>;
  deliver: Record<string, number>;
  /** `deliver.<pool>` → its counts, when the config names pools. */
  pools?: Record<string, Record<string, number>>;
}

/** The worker pools a service env names (both variables), sorted; malformed values are left to the services to refuse. */
export function poolsOf(env: Record<string, string | undefined>): string[] {
  const pools = new Set<string>();
  try {
    if (env['DEDICATED_POOLS']) for (const p of parseDedicatedPools(env['DEDICATED_POOLS']).values()) pools.add(p);
  } catch {
    // the router refuses to boot on it
  }
  try {
    if (env['DELIVER_QUEUES']) for (const q of parseDeliverQueues(env['DELIVER_QUEUES'])) if (q.pool) pools.add(q.pool);
  } catch {
    // the deliverer refuses to boot on it
  }
  return [...pools].sort();
}

export class QueueSampler {
  readonly samples: QueueSample[] = [];
  private redis: Redis;
  private producer: Producer;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(redisUrl: string, prefix: string, private readonly pools: string[] = [], private readonly intervalMs = 1000) {
    this.redis = createRedis(redisUrl, 'producer');
    this.producer = createProducer(this.redis, prefix);
  }

  start(): void {
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
    this.timer.unref();
  }

  async sample(): Promise<QueueSample | null> {
    if (this.busy) return null;
    this.busy = true;
    try {
      const d = await queueDepths(this.producer);
      const s: QueueSample = { t: Date.now(), route: d.route, deliver: d.deliver };
      if (this.pools.length) {
        s.pools = {};
        for (const p of this.pools) s.pools[deliverQueueName(p)] = await this.producer.queue('deliver', p).getJobCounts('waiting', 'delayed', 'active', 'failed');
      }
      this.samples.push(s);
      return s;
    } catch {
      return null; // Redis restarting (chaos): skip this tick
    } finally {
      this.busy = false;
    }
  }

  latest(): QueueSample | undefined {
    return this.samples[this.samples.length - 1];
  }

  /** Waiting + delayed + active jobs over the route, deliver and pool queues. */
  static backlog(s: QueueSample | undefined): number {
    if (!s) return 0;
    const sum = (r: Record<string, number>): number => (r['waiting'] ?? 0) + (r['delayed'] ?? 0) + (r['active'] ?? 0);
    return sum(s.route) + sum(s.deliver) + Object.values(s.pools ?? {}).reduce((a, r) => a + sum(r), 0);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.producer.close().catch(() => undefined);
    this.redis.disconnect();
  }
}
