/**
 * SQLSTATEs that say this transaction lost a race, not that it was wrong: 40P01
 * (deadlock_detected: PostgreSQL aborted it to break a lock cycle) and 40001
 * (serialization_failure). The transaction was rolled back whole, so running it again
 * from the start is safe, and usually succeeds once the other one has finished.
 */
const CONFLICT_CODES = ['40P01', '40001'];

/** The error is a deadlock or a serialization failure (see CONFLICT_CODES). */
export function isLockConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONFLICT_CODES.includes(code);
}

/**
 * Errors after which retrying later can succeed: PostgreSQL could not be reached or went
 * away (restart, failover, connection limit), or chose this transaction as a deadlock
 * victim (isLockConflict), not that the statement was wrong. SQLSTATE classes 08
 * (connection exception) and 57P (operator intervention: shutdown, crash recovery), 53300
 * (too many connections), 40P01 and 40001, and node's socket errors. Retry only a whole
 * transaction (or a statement run on its own, which is one): after 40P01 or 40001 the
 * failed attempt changed nothing.
 */
export function isTransientDbError(err: unknown): boolean {
  if (isLockConflict(err)) return true;
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

/**
 * Runs `fn`, retrying with doubling waits while it fails transiently and the deadline
 * allows. `fn` must be a whole transaction or one statement on its own (a deadlock
 * victim's work was rolled back, and is done again from the start).
 */
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

/** Attempts at a transaction that PostgreSQL chose as a deadlock victim (retryingDeadlocks). */
export const DEADLOCK_TRIES = 3;

/**
 * Runs a transaction again, at once, when PostgreSQL chose it as a deadlock victim or it
 * failed to serialize (isLockConflict), up to DEADLOCK_TRIES attempts in all. For control
 * plane transactions that lock many rows (a destination's lifecycle changes, the
 * automatic disable) and can meet the deliverer's outcome writes. `tx` must be the whole
 * transaction: it is run again from its BEGIN.
 */
export async function retryingDeadlocks<T>(tx: () => Promise<T>, tries = DEADLOCK_TRIES): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await tx();
    } catch (err) {
      if (!isLockConflict(err) || attempt >= tries) throw err;
    }
  }
}
