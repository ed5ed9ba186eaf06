/**
 * Errors that say PostgreSQL could not be reached or went away (restart, failover,
 * connection limit), not that the statement was wrong: retrying later can succeed.
 * SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown,
 * crash recovery), 53300 (too many connections), and node's socket errors.
 */
export function isTransientDbError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code.startsWith('08') || code.startsWith('57P') || code === '53300') return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message);
}

export interface RetryOptions {
  /** Give up (rethrow the last error) once this long has passed since the first try. */
  deadlineMs: number;
  /** First wait; doubles up to `maxDelayMs`. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  onRetry?: (err: unknown, attempt: number) => void;
}

/** Runs `fn`, retrying with doubling waits while it fails transiently and the deadline allows. */
export async function retryTransient<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const started = Date.now();
  let delay = opts.initialDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransientDbError(err) || Date.now() - started + delay > opts.deadlineMs) throw err;
      opts.onRetry?.(err, attempt);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, opts.maxDelayMs ?? 2000);
    }
  }
}
