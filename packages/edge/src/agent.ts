import { setTimeout as timer } from 'node:timers/promises';
import { edgePaths, type WorkItem, type WorkResponse } from '@hookline/delivery/src/wire';
import type { Logger } from '@hookline/logger';
import { retryDelay } from './backoff';
import type { Releaser } from './releaser';
import type { Reporter } from './reporter';
import { ServiceError, type ServiceClient } from './service-client';
import type { TargetSender } from './target-sender';

export interface EdgeAgentDeps {
  client: ServiceClient;
  sender: TargetSender;
  reporter: Reporter;
  /** Gives back, at stop, leases of deliveries not sent or abandoned before any answer. */
  releaser: Releaser;
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
  /**
   * Stops pulling, lets in-flight deliveries finish and their reports go, at most
   * `timeoutMs`. Near the deadline (stopReserveMs before it), sends still without an answer
   * are abandoned and their leases given back, like work that arrives after the stop began.
   */
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

/**
 * The end of a stop kept for giving back leases and sending the last reports: a quarter of
 * the stop's time, at most 5 s. Sends still waiting for an answer then are abandoned.
 */
export const stopReserveMs = (timeoutMs: number): number => Math.min(5_000, Math.floor(timeoutMs / 4));

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
  /** When the stop must be over (ms epoch): leases are given back by then. */
  let stopBy = Infinity;
  const stopSignal = new AbortController();
  /** Aborted near the stop's deadline: sends that have no answer yet are abandoned. */
  const sendStop = new AbortController();
  let loop: Promise<void> | null = null;
  let slotFreed: (() => void) | null = null;

  const freeSlot = (): void => {
    held--;
    slotFreed?.();
  };

  /** Leased, not sent: the leases go back (best effort) and the slots are free. */
  const giveBack = async (items: WorkItem[]): Promise<void> => {
    try {
      await deps.releaser.release(items, stopBy);
    } finally {
      for (let i = 0; i < items.length; i++) freeSlot();
    }
  };

  /** Sends one delivery and reports it; true when it was abandoned unsent (its lease is to go back). */
  const attempt = async (item: WorkItem, limit: number): Promise<boolean> => {
    // A send must not outlive its lease: past it the service hands the delivery to another
    // agent (a second, concurrent send) and ignores this report. The lease is read on the
    // service's clock (client.now), so a skewed local clock changes nothing.
    const budget = Math.min(item.timeout_ms, Date.parse(item.lease_until) - deps.client.now() - REPORT_MARGIN_MS);
    if (!(budget > 0)) {
      deps.logger.warn('lease over before the delivery could be sent; not sent (the service hands it out again)', { delivery_id: item.id, lease_until: item.lease_until });
      return false;
    }
    const report = await deps.sender.send(budget < item.timeout_ms ? { ...item, timeout_ms: Math.floor(budget) } : item, limit, sendStop.signal);
    // Abandoned at the stop's deadline before any answer: not an attempt; the lease goes back.
    if (report === null) return true;
    await deps.reporter.add(report);
    return false;
  };

  const run = async (item: WorkItem, limit: number): Promise<void> => {
    let unsent = false;
    try {
      unsent = await attempt(item, limit);
    } catch (err) {
      deps.logger.error('delivery failed unexpectedly; its lease will expire', { delivery_id: item.id, error: (err as Error).message });
    }
    if (unsent) await giveBack([item]);
    else freeSlot();
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
        // The answer came as the stop began (its request could no longer be abandoned):
        // nothing more is sent, the leases go back.
        if (stopping) {
          void giveBack(work.deliveries);
          break;
        }
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
      stopBy = end;
      stopping = true;
      // A poll in progress is abandoned: the service gives back what it leased for it once it
      // sees the request gone. An answer that had begun is read whole and given back above.
      stopSignal.abort();
      if (loop) await Promise.race([loop, timer(Math.max(0, end - Date.now()), undefined, { ref: false })]);
      // Sends (and reports) get until the reserve; then sends with no answer yet are
      // abandoned and their leases given back, within the rest of the deadline.
      const cut = end - stopReserveMs(timeoutMs);
      while (held > 0 && Date.now() < cut) await timer(20);
      sendStop.abort();
      while (held > 0 && Date.now() < end) await timer(20);
      await deps.reporter.drain(Math.max(0, end - Date.now()));
    },
    inFlight: () => held,
    lastContactAt: () => lastContact,
  };
}
