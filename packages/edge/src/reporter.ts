import { setTimeout as sleep } from 'node:timers/promises';
import { edgePaths, MAX_REPORTS_PER_REQUEST, type AttemptReport, type ReportResponse } from '@hookline/delivery/src/wire';
import type { Logger } from '@hookline/logger';
import { retryDelay } from './backoff';
import { createBatchQueue } from './batch-queue';
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
  /** Its JSON size: what it adds to a request body. */
  bytes: number;
  done: () => void;
}

// Response bodies dominate a report's size; the service's JSON body limit is 1 MB by default.
// Counted as serialised bytes: a body's characters can take up to 6 bytes each in JSON
// (`\u0001`), so counting characters let a batch pass the limit and be refused whole.
const MAX_BATCH_BYTES = 256 * 1024;

/** How many queued reports go in the next request: at least one, at most 100 or ~256 KB. */
function batchSize(queue: readonly Pending[]): number {
  let n = 0;
  let bytes = 0;
  while (n < queue.length && n < MAX_REPORTS_PER_REQUEST) {
    bytes += queue[n]!.bytes + 1;
    if (n > 0 && bytes > MAX_BATCH_BYTES) break;
    n++;
  }
  return n;
}

/**
 * Reports go in batches: the ones that finish while a report request is out travel in the
 * next one. A failed request is retried with backoff (or the service's Retry-After) until
 * the service answers; the deliveries stay "in flight" meanwhile, which bounds what an
 * unreachable service costs. A batch the service refuses (4xx) is split until the report
 * it refuses is alone: only that one is dropped, the others' outcomes are recorded.
 * Repeating a report is harmless: the service records one attempt per lease.
 */
export function createReporter(deps: { client: ServiceClient; clusterId: string; logger: Logger; backoff: { baseMs: number; maxMs: number } }): Reporter {
  const send = async (batch: Pending[]): Promise<void> => {
    for (let failures = 1; ; failures++) {
      try {
        const res = await deps.client.post<ReportResponse>(edgePaths.reports(deps.clusterId), { reports: batch.map((p) => p.report) });
        const ignored = res.results.filter((r) => r.result === 'ignored').length;
        if (ignored) deps.logger.info('reports ignored: their leases no longer hold the deliveries', { count: ignored });
        return;
      } catch (err) {
        if (err instanceof ServiceError && err.permanent) {
          if (batch.length > 1) {
            const half = Math.ceil(batch.length / 2);
            await send(batch.slice(0, half));
            await send(batch.slice(half));
            return;
          }
          deps.logger.error('report refused; dropped (its lease will expire and the delivery goes out again)', { delivery_id: batch[0]?.report.delivery_id, status: err.status, error: err.message });
          return;
        }
        const delay = retryDelay(failures, deps.backoff, err instanceof ServiceError ? err.retryAfterMs : null);
        deps.logger.warn('could not report; retrying', { count: batch.length, retry_in_ms: delay, error: (err as Error).message });
        await sleep(delay);
      }
    }
  };

  const batches = createBatchQueue<Pending>(batchSize, send);

  return {
    add(report) {
      return new Promise((resolve) => {
        batches.push({ report, bytes: Buffer.byteLength(JSON.stringify(report)), done: resolve });
      });
    },
    async drain(timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (let f = batches.running(); f && Date.now() < end; f = batches.running()) await Promise.race([f, sleep(Math.max(0, end - Date.now()), undefined, { ref: false })]);
    },
  };
}
