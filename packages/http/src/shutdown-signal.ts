import type { Logger } from '@hookline/logger';

/**
 * On SIGTERM or SIGINT runs `close` once, then exits 0; if it has not finished within
 * `timeoutMs` (plus a second of grace) the process exits 1 rather than hang.
 */
export function onShutdownSignal(logger: Logger, timeoutMs: number, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, timeoutMs + 1000).unref();
    close().then(
      () => process.exit(0),
      (err: Error) => {
        logger.error('shutdown failed', { error: err.message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
