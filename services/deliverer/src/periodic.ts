import { coalesced } from '@hookline/db';
import type { Logger } from '@hookline/logger';

export interface Periodic {
  /** Stops the timer and waits for a run in progress (and one a kick queued after it). */
  stop(): Promise<void>;
  /** Runs now, not at the next tick; during a run, once more right after it. Nothing after stop. */
  kick(): void;
}

/**
 * Runs `fn` every `intervalMs`, never two at once (coalesced, @hookline/db): a tick during a
 * run is skipped (a slow run does not queue up ticks); kicks during a run add one run after
 * it. Errors are logged, the loop goes on.
 */
export function every(intervalMs: number, name: string, logger: Logger, fn: () => Promise<unknown>): Periodic {
  let stopped = false;
  const runs = coalesced(async () => {
    // A run queued by a kick just before stop() does nothing.
    if (stopped) return;
    await fn().catch((err: Error) => logger.error(`${name} failed`, { error: err.message }));
  });
  const timer = setInterval(() => {
    if (!stopped && !runs.busy()) void runs.request();
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await runs.settled();
    },
    kick() {
      if (!stopped) void runs.request();
    },
  };
}
