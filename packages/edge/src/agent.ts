import { setTimeout as sleep } from 'node:timers/promises';
import { edgePaths, type WorkItem, type WorkResponse } from '@hookline/delivery/src/wire';
import type { Logger } from '@hookline/logger';
import { backoffDelay } from './backoff';
import type { Reporter } from './reporter';
import type { ServiceClient } from './service-client';
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
 * Pulls work over long-polls while it has room (at most `maxInFlight` deliveries held),
 * sends each delivery to its target and reports it. When full it still asks, with max 0,
 * once per wait: a heartbeat, so the cluster stays "connected". When the service cannot
 * be reached it backs off exponentially with jitter.
 */
export function createEdgeAgent(deps: EdgeAgentDeps): EdgeAgent {
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
      const report = await deps.sender.send(item, limit);
      await deps.reporter.add(report);
    } catch (err) {
      deps.logger.error('delivery failed unexpectedly; its lease will expire', { delivery_id: item.id, error: (err as Error).message });
    } finally {
      release();
    }
  };

  /** Resolves when a slot frees up, or after `ms` (then the poll is a heartbeat). */
  const waitForSlot = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      slotFreed = () => {
        clearTimeout(timer);
        slotFreed = null;
        resolve();
      };
    });

  const pull = async (): Promise<void> => {
    // The first request is a heartbeat: the cluster shows connected (and /readyz turns
    // ready) at once, not after a first long-poll.
    for (let failures = 0, first = true; !stopping; ) {
      if (held >= deps.maxInFlight) await waitForSlot(Math.max(1, deps.waitSeconds) * 1000);
      if (stopping) break;
      const max = first ? 0 : Math.max(0, deps.maxInFlight - held);
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
      } catch (err) {
        if (stopping) break;
        const delay = backoffDelay(++failures, deps.backoff.baseMs, deps.backoff.maxMs);
        deps.logger.warn('work request failed; backing off', { retry_in_ms: delay, failures, error: (err as Error).message });
        await sleep(delay, undefined, { signal: stopSignal.signal }).catch(() => undefined);
      }
    }
  };

  return {
    start() {
      loop ??= pull();
    },
    async stop(timeoutMs) {
      stopping = true;
      // A poll in progress is abandoned: what it may have leased comes back when the lease expires.
      stopSignal.abort();
      await loop;
      const end = Date.now() + timeoutMs;
      while (held > 0 && Date.now() < end) await sleep(20);
      await deps.reporter.drain(Math.max(0, end - Date.now()));
    },
    inFlight: () => held,
    lastContactAt: () => lastContact,
  };
}
