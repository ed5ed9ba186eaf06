import { setTimeout as timer } from 'node:timers/promises';
import { edgePaths, type WorkItem, type WorkResponse } from '@hookline/delivery/src/wire';
import type { Logger } from '@hookline/logger';
import { retryDelay } from './backoff';
import type { Reporter } from './reporter';
import { ServiceError, type ServiceClient } from './service-client';
import type { TargetSender } from './target-sender';

export interface EdgeAgentDeps {
  client: ServiceClient;
  sender: TargetSender;
  reporter: Reporter;
  logger: Logger;
  clusterId: string;
  maxInFlight: number;
  waitSeconds: number;
  backoff: { baseMs: number; maxMs: number };
  /** Waits `ms`, or less when `signal` aborts; never rejects (tests record the waits). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface EdgeAgent {
  /** Runs the pull loop until `stop`. */
  start(): void;
  /** Stops pulling, lets in-flight deliveries finish and their reports go, at most `timeoutMs`. */
  stop(timeoutMs: number): Promise<void>;
  /** Deliveries held (sending, or waiting for their report to be taken). */
  inFlight(): number;
  /** When the service last answered a work request (ms epoch; 0 = never). */
  lastContactAt(): number;
}

/**
 * A work request that comes back empty sooner than this waits out the rest before the
 * next one: a service (or a proxy in between) that answers at once is not polled in a loop.
 */
export const MIN_POLL_INTERVAL_MS = 1_000;
/** Kept free at the end of a lease for the report to reach the service while it holds. */
export const REPORT_MARGIN_MS = 500;

const pause = (ms: number, signal: AbortSignal): Promise<void> => timer(ms, undefined, { signal }).catch(() => undefined);

/**
 * Pulls work over long-polls while it has room (at most `maxInFlight` deliveries held),
 * sends each delivery to its target and reports it. When full it still asks, with max 0,
 * once per wait: a heartbeat, so the cluster stays "connected". When the service cannot
 * be reached, or answers 429/5xx, it backs off exponentially with jitter, longer when the
 * service's Retry-After says so.
 */
export function createEdgeAgent(deps: EdgeAgentDeps): EdgeAgent {
  const sleep = deps.sleep ?? pause;
  let held = 0;
  let lastContact = 0;
  let stopping = false;
  const stopSignal = new AbortController();
  let loop: Promise<void> | null = null;
  let slotFreed: (() => void) | null = null;

  const release = (): void => {
    held--;
    slotFreed?.();
  };

  const run = async (item: WorkItem, limit: number): Promise<void> => {
    try {
      // A send must not outlive its lease: past it the service hands the delivery to another
      // agent (a second, concurrent send) and ignores this report. The lease is read on the
      // service's clock (client.now), so a skewed local clock changes nothing.
      const budget = Math.min(item.timeout_ms, Date.parse(item.lease_until) - deps.client.now() - REPORT_MARGIN_MS);
      if (!(budget > 0)) {
        deps.logger.warn('lease over before the delivery could be sent; not sent (the service hands it out again)', { delivery_id: item.id, lease_until: item.lease_until });
        return;
      }
      const report = await deps.sender.send(budget < item.timeout_ms ? { ...item, timeout_ms: Math.floor(budget) } : item, limit);
      await deps.reporter.add(report);
    } catch (err) {
      deps.logger.error('delivery failed unexpectedly; its lease will expire', { delivery_id: item.id, error: (err as Error).message });
    } finally {
      release();
    }
  };

  /** Resolves when a slot frees up, on stop, or after `ms` (then the poll is a heartbeat). */
  const waitForSlot = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        slotFreed = null;
        stopSignal.signal.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      slotFreed = done;
      stopSignal.signal.addEventListener('abort', done);
    });

  const pull = async (): Promise<void> => {
    // The first request is a heartbeat: the cluster shows connected (and /readyz turns
    // ready) at once, not after a first long-poll.
    for (let failures = 0, first = true; !stopping; ) {
      if (held >= deps.maxInFlight) await waitForSlot(Math.max(1, deps.waitSeconds) * 1000);
      if (stopping) break;
      const max = first ? 0 : Math.max(0, deps.maxInFlight - held);
      const askedAt = Date.now();
      try {
        const work = await deps.client.post<WorkResponse>(
          edgePaths.work(deps.clusterId),
          { max, wait_seconds: max > 0 ? deps.waitSeconds : 0 },
          { signal: stopSignal.signal, timeoutMs: (deps.waitSeconds + 30) * 1000 },
        );
        failures = 0;
        first = false;
        lastContact = Date.now();
        held += work.deliveries.length;
        // Every item starts now, never queued: the service signed its headers at lease time
        // (services/api lease-work.ts), so holding one back would age its signed timestamp.
        for (const item of work.deliveries) void run(item, work.response_body_limit);
        const early = askedAt + MIN_POLL_INTERVAL_MS - Date.now();
        if (max > 0 && work.deliveries.length === 0 && early > 0) await sleep(early, stopSignal.signal);
      } catch (err) {
        if (stopping) break;
        const delay = retryDelay(++failures, deps.backoff, err instanceof ServiceError ? err.retryAfterMs : null);
        deps.logger.warn('work request failed; backing off', { retry_in_ms: delay, failures, error: (err as Error).message });
        await sleep(delay, stopSignal.signal);
      }
    }
  };

  return {
    start() {
      loop ??= pull();
    },
    async stop(timeoutMs) {
      const end = Date.now() + timeoutMs;
      stopping = true;
      // A poll in progress is abandoned: what it may have leased comes back when the lease expires.
      stopSignal.abort();
      await loop;
      while (held > 0 && Date.now() < end) await timer(20);
      await deps.reporter.drain(Math.max(0, end - Date.now()));
    },
    inFlight: () => held,
    lastContactAt: () => lastContact,
  };
}
