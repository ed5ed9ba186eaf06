export interface OutcomeRecorder<T> {
  /** One delivery's outcome, as soon as it is known. */
  add(outcome: T): void;
  /** Records what is left and waits for every write; rejects if any write failed. */
  finish(): Promise<void>;
}

/**
 * Records a batch's outcomes as its requests complete instead of after the slowest one:
 * the first completion starts a `lingerMs` timer, and everything completed by then is
 * written together (so a batch of fast requests is still one write). A receiver that
 * answered is thus recorded within about `lingerMs`, not after the batch's slowest request
 * (up to its timeout), which is the window in which a crash or a PostgreSQL restart turns
 * a delivered request into a duplicate; and what follows a write (retries scheduled,
 * circuits told, deliveries given back) follows it as promptly.
 */
export function createOutcomeRecorder<T>(write: (outcomes: T[]) => Promise<void>, lingerMs: number): OutcomeRecorder<T> {
  let pending: T[] = [];
  let timer: NodeJS.Timeout | undefined;
  const writes: Promise<void>[] = [];
  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    const w = write(batch);
    w.catch(() => undefined); // observed by finish(); never an unhandled rejection meanwhile
    writes.push(w);
  };
  return {
    add(outcome) {
      pending.push(outcome);
      timer ??= setTimeout(flush, lingerMs);
    },
    async finish() {
      flush();
      const results = await Promise.allSettled(writes);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
