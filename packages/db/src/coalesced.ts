export interface Coalesced<T> {
  /** Starts a run, or, while one runs, answers the single run that follows it. */
  request(): Promise<T>;
  /** True while a run is in progress or one is waiting to follow it. */
  busy(): boolean;
  /** Resolves once the current run and the one waiting after it (if any) have settled. */
  settled(): Promise<void>;
}

/**
 * One run of `run` at a time, and at most one waiting: however many ask while a run is in
 * progress, one run follows it and they all get its answer. A queue of runs (one per ask)
 * would each run after the slow one, late, and to no purpose. Used by the evidence sealer's
 * passes and the deliverer's periodic jobs (sweeps, purge, janitor).
 */
export function coalesced<T>(run: () => Promise<T>): Coalesced<T> {
  let running: Promise<T> | null = null;
  let queued: Promise<T> | null = null;

  const start = (): Promise<T> => {
    const p = run();
    running = p;
    const done = (): void => {
      if (running === p) running = null;
    };
    p.then(done, done);
    return p;
  };

  return {
    request() {
      if (queued) return queued;
      if (!running) return start();
      const q = running.catch(() => undefined).then(() => {
        queued = null;
        return start();
      });
      queued = q;
      return q;
    },
    busy: () => running !== null || queued !== null,
    async settled() {
      await (queued ?? running)?.then(
        () => undefined,
        () => undefined,
      );
    },
  };
}
