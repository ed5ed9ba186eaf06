import { setTimeout as sleep } from 'node:timers/promises';
import { edgePaths, MAX_REPORTS_PER_REQUEST, type AttemptReport, type ReportResponse } from '@hookline/delivery/src/wire';
import type { Logger } from '@hookline/logger';
import { backoffDelay } from './backoff';
import type { ServiceClient } from './service-client';
import { ServiceError } from './service-client';

export interface Reporter {
  /** Resolves once the service has the report (recorded or ignored), or it was dropped. */
  add(report: AttemptReport): Promise<void>;
  /** Waits for the reports queued so far, at most `timeoutMs`. */
  drain(timeoutMs: number): Promise<void>;
}

interface Pending {
  report: AttemptReport;
  done: () => void;
}

/**
 * Reports go in batches: the ones that finish while a report request is out travel in the
 * next one. A failed request is retried with backoff until the service answers; the
 * deliveries stay "in flight" meanwhile, which bounds what an unreachable service costs.
 */
// Response bodies dominate a report's size; the service's JSON body limit is 1 MB by default.
const MAX_BATCH_BYTES = 256 * 1024;

/** How many queued reports go in the next request: at least one, at most 100 or ~256 KB. */
function batchSize(queue: Pending[]): number {
  let n = 0;
  let bytes = 0;
  while (n < queue.length && n < MAX_REPORTS_PER_REQUEST) {
    bytes += 512 + (queue[n]!.report.response_body?.length ?? 0);
    if (n > 0 && bytes > MAX_BATCH_BYTES) break;
    n++;
  }
  return n;
}

export function createReporter(deps: { client: ServiceClient; clusterId: string; logger: Logger; backoff: { baseMs: number; maxMs: number } }): Reporter {
  const queue: Pending[] = [];
  let flushing: Promise<void> | null = null;

  const send = async (batch: Pending[]): Promise<void> => {
    for (let failures = 1; ; failures++) {
      try {
        const res = await deps.client.post<ReportResponse>(edgePaths.reports(deps.clusterId), { reports: batch.map((p) => p.report) });
        const ignored = res.results.filter((r) => r.result === 'ignored').length;
        if (ignored) deps.logger.info('reports ignored: their leases no longer hold the deliveries', { count: ignored });
        return;
      } catch (err) {
        if (err instanceof ServiceError && err.permanent) {
          deps.logger.error('reports refused; dropped (their leases will expire and the deliveries go out again)', { count: batch.length, error: err.message });
          return;
        }
        const delay = backoffDelay(failures, deps.backoff.baseMs, deps.backoff.maxMs);
        deps.logger.warn('could not report; retrying', { count: batch.length, retry_in_ms: delay, error: (err as Error).message });
        await sleep(delay);
      }
    }
  };

  const flush = (): void => {
    if (flushing) return;
    flushing = (async () => {
      while (queue.length > 0) {
        const batch = queue.splice(0, batchSize(queue));
        await send(batch);
        for (const p of batch) p.done();
      }
    })().finally(() => {
      flushing = null;
      if (queue.length > 0) flush();
    });
  };

  return {
    add(report) {
      return new Promise((resolve) => {
        queue.push({ report, done: resolve });
        flush();
      });
    },
    async drain(timeoutMs) {
      const end = Date.now() + timeoutMs;
      while (flushing && Date.now() < end) await Promise.race([flushing, sleep(Math.max(0, end - Date.now()), undefined, { ref: false })]);
    },
  };
}
