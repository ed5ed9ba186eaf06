import type { Logger } from '@hookline/logger';

export interface ShutdownOptions {
  /** How long past `timeoutMs` the drain may run before the process exits 1 anyway (default 1 s). */
  graceMs?: number;
  /** Exits the process (tests replace it). */
  exit?: (code: number) => void;
}

/**
 * On SIGTERM or SIGINT runs `close` once, then exits 0; if it has not finished within
 * `timeoutMs` (plus `graceMs`) the process exits 1 rather than hang. A second signal
 * while draining exits 1 at once (an operator's second Ctrl-C, or an orchestrator that
 * does not want to wait): what the process still holds comes back as leases and stalled
 * jobs expire.
 */
export function onShutdownSignal(logger: Logger, timeoutMs: number, close: () => Promise<void>, opts: ShutdownOptions = {}): void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      logger.error('second signal while draining; exiting now', { signal });
      exit(1);
      return;
    }
    stopping = true;
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
