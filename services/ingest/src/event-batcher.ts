import type { Pool } from '@hookline/db';
import { AppError } from '@hookline/errors';
import type { Logger } from '@hookline/logger';
import type { Metrics } from '@hookline/observability';
import type { Producer } from '@hookline/queues';
import { createRouteEnqueuer } from './route-enqueuer';
import { writeBatch, type PendingEvent, type WriteOutcome } from './write-batch';

export interface BatcherOptions {
  /** Rows per flush (INGEST_BATCH_MAX). */
  maxBatch: number;
  /** Flushes (transactions) at once (INGEST_FLUSHES_IN_FLIGHT). */
  maxInFlight: number;
  dedupWindowSeconds: number;
  /** A stalled PostgreSQL must not hold answers for ever: a flush is given up (503) after this (INGEST_DB_TIMEOUT_MS). */
  dbTimeoutMs?: number;
  /** A slow Redis must not hold answers for events already committed. */
  enqueueTimeoutMs: number;
  /** Payload bytes per flush, so a batch of large bodies stays a sane statement. */
  maxBatchBytes?: number;
  /** Committed ids wait this long for more before their `route` job is sent (INGEST_ROUTE_LINGER_MS); 0: at once. */
  routeLingerMs?: number;
  /** Ids per `route` job at most (INGEST_ROUTE_BATCH_MAX). */
  routeBatchMax?: number;
}

export interface BatcherDeps {
  pool: Pool;
  producer: Producer;
  logger: Logger;
  /** False while the producer's Redis connection is known to be down: the enqueue is skipped at once. */
  queueReady?: () => boolean;
  /** Counts failed enqueues (hookline_redis_errors_total{operation="enqueue"}). */
  metrics?: Pick<Metrics, 'redisErrors'>;
}

export interface EventBatcher {
  /** Resolves once the event is committed (or found to be a duplicate, or an idempotency conflict); rejects with a 503 AppError when it was not stored. */
  submit(event: PendingEvent): Promise<Exclude<WriteOutcome, { kind: 'retry' }>>;
  /** Resolves when every submitted event has been answered and its `route` job sent. */
  drain(): Promise<void>;
}

/** SQLSTATE classes of a statement refused for what a row holds: data exception, integrity constraint, program limit (e.g. an index row too large). */
const ROW_ERROR_CLASSES = new Set(['22', '23', '54']);
/** Single-event writes at once when a batch is written again event by event. */
const ROW_RETRY_PARALLEL = 4;
const isRowError = (err: unknown): boolean => ROW_ERROR_CLASSES.has(String((err as { code?: unknown }).code ?? '').slice(0, 2));

export const unavailable = (): AppError => new AppError('service-unavailable', 'Events cannot be stored right now; retry later.', {}, { 'retry-after': '1' });

interface Waiting {
  event: PendingEvent;
  resolve(o: Exclude<WriteOutcome, { kind: 'retry' }>): void;
  reject(e: unknown): void;
}

/**
 * Group commit: a request that arrives while the flushes in flight are busy waits for
 * the next one, which writes everything waiting in one transaction. No timer delays a
 * lone request (a flush starts on the next turn of the event loop). The answer goes out
 * after COMMIT; the new event ids then go to the `route` queue, gathered over
 * `routeLingerMs` across commits into one job. If the enqueue fails (or the process dies
 * first) the events are still durable and the router's recovery sweep enqueues them.
 */
export function createEventBatcher(deps: BatcherDeps, opts: BatcherOptions): EventBatcher {
  const maxBytes = opts.maxBatchBytes ?? 8 * 1024 * 1024;
  const waiting: Waiting[] = [];
  let inFlight = 0;
  let open = 0;
  let scheduled = false;
  let idle: (() => void)[] = [];

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(pump);
  };

  function pump(): void {
    scheduled = false;
    while (inFlight < opts.maxInFlight && waiting.length > 0) {
      let n = 0;
      let bytes = 0;
      while (n < waiting.length && n < opts.maxBatch && (n === 0 || bytes + waiting[n]!.event.body.length <= maxBytes)) bytes += waiting[n++]!.event.body.length;
      inFlight++;
      void flush(waiting.splice(0, n));
    }
  }

  async function enqueue(eventIds: string[], traceparent: string | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`enqueue timed out after ${opts.enqueueTimeoutMs} ms`)), opts.enqueueTimeoutMs);
    });
    try {
      if (deps.queueReady && !deps.queueReady()) throw new Error('Redis is not connected');
      await Promise.race([deps.producer.add('route', { v: 1, eventIds, ...(traceparent ? { traceparent } : {}) }), timeout]);
    } catch (err) {
      deps.metrics?.redisErrors.inc({ operation: 'enqueue' });
      deps.logger.warn('route enqueue failed; events are committed and the router recovery sweep will enqueue them', { events: eventIds.length, first_event_id: eventIds[0], error: (err as Error).message });
    } finally {
      clearTimeout(timer);
    }
  }

  function settle(batch: Waiting[], each: (w: Waiting, i: number) => void): void {
    batch.forEach(each);
    open -= batch.length;
    if (open === 0) {
      for (const r of idle) r();
      idle = [];
    }
  }

  const writeEach = (batch: Waiting[]): Promise<WriteOutcome[]> => writeBatch(deps.pool, batch.map((w) => w.event), opts.dedupWindowSeconds, opts.dbTimeoutMs);

  /**
   * The batch's outcomes. When PostgreSQL refuses the statement because of what one row
   * holds (a data error, a constraint, a size limit), each event is written alone, so that
   * the row fails (503) and only it: the others, of any tenant, are stored as usual.
   */
  async function write(batch: Waiting[]): Promise<WriteOutcome[]> {
    try {
      return await writeEach(batch);
    } catch (err) {
      if (batch.length === 1 || !isRowError(err)) throw err;
      deps.logger.warn('event batch refused for one of its rows; writing its events one by one', { events: batch.length, error: (err as Error).message });
      // A few at a time: the batch's 500 statements at once would take the pool from every other flush.
      const each: PromiseSettledResult<WriteOutcome[]>[] = [];
      for (let i = 0; i < batch.length; i += ROW_RETRY_PARALLEL) each.push(...(await Promise.allSettled(batch.slice(i, i + ROW_RETRY_PARALLEL).map((w) => writeEach([w])))));
      return each.map((r, i) => {
        if (r.status === 'fulfilled') return r.value[0]!;
        deps.logger.error('event not stored', { event_id: batch[i]!.event.eventId, error: (r.reason as Error).message });
        return { kind: 'retry' as const };
      });
    }
  }

  async function flush(batch: Waiting[]): Promise<void> {
    let outcomes: WriteOutcome[];
    try {
      outcomes = await write(batch);
    } catch (err) {
      inFlight--;
      schedule();
      deps.logger.error('event batch not stored', { events: batch.length, error: (err as Error).message });
      settle(batch, (w) => w.reject(unavailable()));
      return;
    }
    // The slot is free as soon as PostgreSQL is done; the enqueue overlaps the next flush.
    inFlight--;
    schedule();
    const fresh = outcomes.flatMap((o) => (o.kind === 'accepted' ? [o.eventId] : []));
    // One job, one traceparent: the first new event's (every event keeps its own trace id as its correlation id).
    route.add(fresh, batch[outcomes.findIndex((o) => o.kind === 'accepted')]?.event.traceparent);
    settle(batch, (w, i) => {
      const o = outcomes[i]!;
      if (o.kind === 'retry') w.reject(unavailable());
      else w.resolve(o);
    });
  }

  const route = createRouteEnqueuer(enqueue, { lingerMs: opts.routeLingerMs ?? 0, maxIds: opts.routeBatchMax ?? 500 });

  return {
    submit(event) {
      open++;
      return new Promise((resolve, reject) => {
        waiting.push({ event, resolve, reject });
        schedule();
      });
    },
    async drain() {
      if (open > 0) await new Promise<void>((r) => idle.push(r));
      await route.drain();
    },
  };
}
