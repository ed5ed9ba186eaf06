// Hookline's real backlog is in PostgreSQL, not in the BullMQ queues (a job carries a batch
// of ids, and recovery re-enqueues what a lost job held): every 2 s during the phases, the
// events waiting for routing (status `validated`) and the open deliveries (pending,
// delivering, failed or replaying, i.e. not yet delivered or exhausted). Both counts walk
// a partial index that holds only those rows (events_received_at_validated_idx,
// deliveries_destination_id_next_attempt_at_open_idx), on a connection of its own with
// index plans forced, and stop at `cap` rows each (a capped count reads "at least"). A
// count that takes long doubles the interval (up to 16 s), so the sampling cannot weigh
// on the run; each sample keeps its own cost (`queryMs`).
import { Pool } from 'pg';
import { parseDatabaseUrl } from '@hookline/db';

export interface BacklogSample {
  t: number;
  /** Events stored and acknowledged, not yet routed. */
  eventsToRoute: number;
  /** Deliveries not yet final (pending, delivering, failed awaiting a retry, replaying). */
  openDeliveries: number;
  /** True when a count stopped at the cap (the figure is a lower bound). */
  capped: boolean;
  queryMs: number;
}

const OPEN_WORK = `
  SELECT (SELECT count(*) FROM (SELECT 1 FROM events WHERE status = 'validated' LIMIT $1) e)::int AS events,
         (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status IN ('pending', 'delivering', 'failed', 'replaying') LIMIT $1) d)::int AS deliveries`;

/** The next sampling interval: doubled (up to 16 s) after a count slower than a quarter of it, back to the base once quick again. */
export function nextInterval(baseMs: number, currentMs: number, queryMs: number): number {
  if (queryMs > currentMs / 4) return Math.min(16_000, currentMs * 2);
  if (queryMs < baseMs / 20) return baseMs;
  return currentMs;
}

export class BacklogSampler {
  readonly samples: BacklogSample[] = [];
  private pool: Pool;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private intervalMs: number;

  constructor(databaseUrl: string, private readonly baseMs = 2000, private readonly cap = 250_000) {
    const { connectionString, schema } = parseDatabaseUrl(databaseUrl);
    this.pool = new Pool({ connectionString, max: 1, options: `-c search_path="${schema}" -c jit=off -c enable_seqscan=off -c statement_timeout=5000`, connectionTimeoutMillis: 5000 });
    this.pool.on('error', () => undefined);
    this.intervalMs = baseMs;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const loop = async (): Promise<void> => {
      if (!this.running) return;
      const s = await this.sample();
      if (s) this.intervalMs = nextInterval(this.baseMs, this.intervalMs, s.queryMs);
      if (this.running) {
        this.timer = setTimeout(() => void loop(), this.intervalMs);
        this.timer.unref();
      }
    };
    void loop();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  async sample(): Promise<BacklogSample | null> {
    const t0 = performance.now();
    try {
      const r = await this.pool.query<{ events: number; deliveries: number }>(OPEN_WORK, [this.cap]);
      const row = r.rows[0] ?? { events: 0, deliveries: 0 };
      const s = { t: Date.now(), eventsToRoute: row.events, openDeliveries: row.deliveries, capped: row.events >= this.cap || row.deliveries >= this.cap, queryMs: Math.round((performance.now() - t0) * 10) / 10 };
      this.samples.push(s);
      return s;
    } catch {
      return null; // a slow or failed count is skipped, never retried at once
    }
  }

  latest(): BacklogSample | undefined {
    return this.samples[this.samples.length - 1];
  }

  async close(): Promise<void> {
    this.stop();
    await this.pool.end().catch(() => undefined);
  }
}
