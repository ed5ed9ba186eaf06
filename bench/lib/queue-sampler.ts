// BullMQ job counts of the route and deliver queues under the run's prefix, once a second.
import { createProducer, createRedis, queueDepths, type Producer, type Redis } from '@hookline/queues';

export interface QueueSample {
  t: number;
  route: Record<string, number>;
  deliver: Record<string, number>;
}

export class QueueSampler {
  readonly samples: QueueSample[] = [];
  private redis: Redis;
  private producer: Producer;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(redisUrl: string, prefix: string, private readonly intervalMs = 1000) {
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
      const s = { t: Date.now(), route: d.route, deliver: d.deliver };
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

  /** Waiting + delayed + active jobs over both queues. */
  static backlog(s: QueueSample | undefined): number {
    if (!s) return 0;
    const sum = (r: Record<string, number>): number => (r['waiting'] ?? 0) + (r['delayed'] ?? 0) + (r['active'] ?? 0);
    return sum(s.route) + sum(s.deliver);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.producer.close().catch(() => undefined);
    this.redis.disconnect();
  }
}
