/** An item waiting in a BatchQueue: `done` is called once its batch was sent (or given up). */
export interface Queued {
  done: () => void;
}

export interface BatchQueue<P extends Queued> {
  /** Queues items and starts a flush unless one is running (it takes them too). */
  push(...items: P[]): void;
  /** The flush running now, or null when the queue is idle. */
  running(): Promise<void> | null;
}

/**
 * One request at a time, batching whatever queued meanwhile: the items added while a
 * request is out travel together in the next one. `take` says how many of the queue's head
 * go in the next batch (at least one); `send` never rejects; `beforeFlush` runs once at the
 * start of each flush (the releaser waits a turn there, so that sends cut together travel
 * together).
 */
export function createBatchQueue<P extends Queued>(take: (queue: readonly P[]) => number, send: (batch: P[]) => Promise<void>, beforeFlush?: () => Promise<void>): BatchQueue<P> {
  const queue: P[] = [];
  let flushing: Promise<void> | null = null;
  const flush = (): void => {
    if (flushing) return;
    flushing = (async () => {
      if (beforeFlush) await beforeFlush();
      while (queue.length > 0) {
        const batch = queue.splice(0, Math.max(1, take(queue)));
        await send(batch);
        for (const p of batch) p.done();
      }
    })().finally(() => {
      flushing = null;
      if (queue.length > 0) flush();
    });
  };
  return {
    push(...items) {
      queue.push(...items);
      flush();
    },
    running: () => flushing,
  };
}
