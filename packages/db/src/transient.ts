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

interface ErrorRule {
  /** pg's SQLSTATE, node's socket code, or Prisma's P code. */
  code(code: string): boolean;
  /** The kinds of Prisma's driver adapter error (its cause) that count. */
  adapterKinds: readonly string[];
  /** pg's own messages that carry no code. */
  message: RegExp;
}

const DB_ERROR_CODES = /^P\d{4}$/;

/**
 * One reading of an error for both rules below: a lock conflict counts for either; then the
 * code; a Prisma error (P code) by its driver adapter's cause (a kind, or PostgreSQL's
 * SQLSTATE read by the same rule), nothing else; pg's by its message.
 */
function matches(err: unknown, rule: ErrorRule): boolean {
  if (isLockConflict(err)) return true;
  const e = err as { code?: unknown; message?: unknown; meta?: { driverAdapterError?: { cause?: unknown } } } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (rule.code(code)) return true;
  if (DB_ERROR_CODES.test(code)) {
    const cause = e?.meta?.driverAdapterError?.cause as { kind?: unknown; code?: unknown } | null | undefined;
    if (typeof cause?.kind !== 'string') return false;
    return rule.adapterKinds.includes(cause.kind) || (cause.kind === 'postgres' && typeof cause.code === 'string' && matches({ code: cause.code }, rule));
  }
  return rule.message.test(typeof e?.message === 'string' ? e.message : '');
}

/**
 * Prisma's codes (the api reads through Prisma's pg adapter): P1001 cannot reach the
 * server, P1002 and P1008 timed out, P1017 the server closed the connection, P2024 no
 * pooled connection in time, P2034 a write conflict or deadlock.
 */
const TRANSIENT: ErrorRule = {
  code: (c) =>
    c.startsWith('08') || c.startsWith('57P') || ['53300', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2034'].includes(c),
  adapterKinds: ['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'TransactionWriteConflict'],
  message: /Connection terminated|connection timeout|Client has encountered a connection error/i,
};

/** Not connected, or rolled back whole: pg's and Prisma's forms (see isDbUnreachable). */
const UNREACHABLE: ErrorRule = {
  code: (c) => ['08001', '08004', '57P03', '53300', 'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'P1001', 'P2024', 'P2034'].includes(c),
  adapterKinds: ['DatabaseNotReachable', 'TooManyConnections', 'TransactionWriteConflict'],
  message: /timeout exceeded when trying to connect/i,
};

/**
 * Errors after which retrying later can succeed: PostgreSQL could not be reached or went
 * away (restart, failover, connection limit), or chose this transaction as a deadlock
 * victim (isLockConflict), not that the statement was wrong. SQLSTATE classes 08
 * (connection exception) and 57P (operator intervention: shutdown, crash recovery), 53300
 * (too many connections), 40P01 and 40001, node's socket errors, and Prisma's forms of the
 * same. Retry only a whole transaction (or a statement run on its own, which is one): after
 * 40P01 or 40001 the failed attempt changed nothing.
 */
export function isTransientDbError(err: unknown): boolean {
  return matches(err, TRANSIENT);
}

/**
 * The transient errors after which nothing was applied, for sure: PostgreSQL could not be
 * reached or refused the connection (08001, 08004, 57P03 starting up, 53300 too many
 * connections, a refused or unresolvable address, no pooled connection in time), or it
 * rolled the transaction back whole (isLockConflict). Unlike a connection lost mid-statement
 * (isTransientDbError's other cases), where a COMMIT may have landed before the reply was
 * lost, so that a client told to retry could apply a write twice.
 */
export function isDbUnreachable(err: unknown): boolean {
  return matches(err, UNREACHABLE);
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
