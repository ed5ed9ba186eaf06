import type { Logger } from '@hookline/logger';

export interface Periodic {
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/** Runs `fn` every `intervalMs` (never two at once); errors are logged, the loop goes on. */
export function every(intervalMs: number, name: string, logger: Logger, fn: () => Promise<unknown>): Periodic {
  let running: Promise<void> | null = null;
  const tick = (): void => {
    if (running) return;
    running = fn()
      .then(
        () => undefined,
        (err: Error) => {
          logger.error(`${name} failed`, { error: err.message });
        },
      )
      .finally(() => (running = null));
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
