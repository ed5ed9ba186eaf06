import type { Logger } from '@hookline/logger';

export interface ShutdownOptions {
  /** How long past `timeoutMs` the drain may run before the process exits 1 anyway (default 1 s). */
  graceMs?: number;
  /** Exits the process (tests replace it). */
  exit?: (code: number) => void;
}

/**
 * On SIGTERM or SIGINT runs `close` once, then exits 0; if it has not finished within
 * `timeoutMs` (plus `graceMs`) the process exits 1 rather than hang. The same signal
 * again while draining exits 1 at once (an operator's second Ctrl-C, or an orchestrator
 * that does not want to wait): what the process still holds comes back as leases and
 * stalled jobs expire. The other signal is not a second request: a Ctrl-C in a terminal
 * reaches every process of its group (SIGINT) while `pnpm start` passes the stop on to
 * its services (SIGTERM), and that one stop must still drain.
 */
export function onShutdownSignal(logger: Logger, timeoutMs: number, close: () => Promise<void>, opts: ShutdownOptions = {}): void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let first: string | null = null;
  const stop = (signal: string): void => {
    if (first === signal) {
      logger.error('second signal while draining; exiting now', { signal });
      exit(1);
      return;
    }
    if (first) return;
    first = signal;
    logger.info('shutting down', { signal });
    setTimeout(() => {
      logger.error('shutdown timed out');
      exit(1);
    }, timeoutMs + (opts.graceMs ?? 1000)).unref();
    close().then(
      () => exit(0),
      (err: Error) => {
        logger.error('shutdown failed', { error: err.message });
        exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
