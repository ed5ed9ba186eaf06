import { createHash } from 'node:crypto';
import { withTryLock, type Pool } from '@hookline/db';
import type { Logger } from '@hookline/logger';
import type { Producer } from '@hookline/queues';

export interface RecoverDeps {
  pool: Pool;
  producer: Pick<Producer, 'add'>;
  logger: Logger;
}

export interface RecoverOptions {
  /** Events still `validated` this long after `validated_at` are considered lost. */
  olderThanMs: number;
  /** Events per sweep at most. */
  limit: number;
  /** Event ids per `route` job. */
  batchSize?: number;
}

export interface RecoverOutcome {
  /** False when another replica holds the sweep lock; nothing was done. */
  locked: boolean;
  eventIds: string[];
  jobs: number;
}

// withTryLock puts the schema in the key, so deployments (and test schemas) sharing a
// database do not block each other.
export const RECOVERY_LOCK = 'router-recovery';
// Age by validated_at, which ingest's INSERT sets with PostgreSQL's now(), the clock this is
// compared with; received_at comes from the ingest host's clock, so a host running ahead
// made its events wait that much longer to be recovered, and one running behind had them
// re-enqueued while their job was merely queued. (A row without
// validated_at, written before it was set, falls back to received_at.) The walk stays on the
// partial index events_received_at_validated_idx (only `validated` events, few), in its order.
export const STALE_EVENTS = `SELECT id FROM events
  WHERE status = 'validated' AND COALESCE(validated_at, received_at) < now() - $1::int * interval '1 millisecond'
  ORDER BY received_at LIMIT $2`;

/**
 * One sweep: finds events a lost `route` job left in `validated` and enqueues them again
 * (Redis is only a hint; PostgreSQL is the truth). The lock is held until the jobs are
 * enqueued, so one replica sweeps at a time. Routing is idempotent, so an event whose
 * job was merely slow costs one extra, empty, job.
 */
export async function recoverEvents(deps: RecoverDeps, opts: RecoverOptions): Promise<RecoverOutcome> {
  const batchSize = opts.batchSize ?? 200;
  const out = await withTryLock(deps.pool, RECOVERY_LOCK, async (client) => {
    const { rows } = await client.query<{ id: string }>(STALE_EVENTS, [opts.olderThanMs, opts.limit]);
    const eventIds = rows.map((r) => r.id);
    // One job id per batch and time window: a sweep that runs again while the job still
    // waits does not add a twin, and a later window can retry a job that failed for good.
    const window = Math.floor(Date.now() / Math.max(opts.olderThanMs, 1000));
    let jobs = 0;
    for (let i = 0; i < eventIds.length; i += batchSize) {
      const batch = eventIds.slice(i, i + batchSize);
      const digest = createHash('sha1').update(batch.join(',')).digest('hex').slice(0, 20);
      await deps.producer.add('route', { v: 1, eventIds: batch }, { jobId: `recover-${digest}-${window}` });
      jobs++;
    }
    return { locked: true, eventIds, jobs };
  });
  if (!out) return { locked: false, eventIds: [], jobs: 0 };
  if (out.eventIds.length > 0) deps.logger.warn('re-enqueued events a route job left behind', { events: out.eventIds.length, jobs: out.jobs });
  return out;
}

export interface Sweeper {
  stop(): Promise<void>;
}

/** Runs `recoverEvents` every `intervalMs` (one sweep at a time) until stopped. */
export function startRecoverySweeper(deps: RecoverDeps, opts: RecoverOptions & { intervalMs: number }): Sweeper {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = (): void => {
    running = recoverEvents(deps, opts)
      .then(() => undefined)
      .catch((err: Error) => {
        deps.logger.error('recovery sweep failed', { err: err.message });
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, opts.intervalMs);
      });
  };
  timer = setTimeout(tick, opts.intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
