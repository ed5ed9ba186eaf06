/**
 * A counting semaphore: at most `limit` units held; each holder takes `n` units (1 by
 * default, at most the whole limit, so an oversized holder runs alone rather than never).
 * Waiters are served in arrival order: a large holder is not overtaken for ever by small ones.
 */
export class Limiter {
  private active = 0;
  private readonly waiting: { n: number; go: () => void }[] = [];

  constructor(public limit: number) {}

  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  /** Units held right now. */
  get held(): number {
    return this.active;
  }

  acquire(n = 1): Promise<void> {
    if (this.waiting.length === 0 && this.active + n <= this.limit) {
      this.active += n;
      return Promise.resolve();
    }
    return new Promise((go) => this.waiting.push({ n, go }));
  }

  release(n = 1): void {
    this.active -= n;
    while (this.waiting.length > 0 && this.active + this.waiting[0]!.n <= this.limit) {
      const next = this.waiting.shift()!;
      this.active += next.n;
      next.go();
    }
  }

  async run<T>(fn: () => Promise<T>, n = 1): Promise<T> {
    const take = Math.max(0, Math.min(n, this.limit));
    await this.acquire(take);
    try {
      return await fn();
    } finally {
      this.release(take);
    }
  }
}

/**
 * One limiter per destination (its `max_concurrency`) inside one overall limit. A
 * destination's limiter is dropped when idle, so the map holds only active destinations.
 */
export class ConcurrencyLimits {
  private readonly perDestination = new Map<string, Limiter>();
  private readonly overall: Limiter;

  constructor(maxInFlight: number) {
    this.overall = new Limiter(maxInFlight);
  }

  /** `fn` in a slot of the destination and, within it, one of the overall limit. */
  run<T>(destinationId: string, limit: number, fn: () => Promise<T>): Promise<T> {
    return this.inDestination(destinationId, limit, () => this.inOverall(fn));
  }

  /**
   * `fn` in a slot of the destination only: for what may wait long (a Redis call) without
   * holding a slot every destination shares. It takes the overall one itself (inOverall).
   */
  async inDestination<T>(destinationId: string, limit: number, fn: () => Promise<T>): Promise<T> {
    let l = this.perDestination.get(destinationId);
    if (!l) this.perDestination.set(destinationId, (l = new Limiter(limit)));
    l.limit = limit;
    const dest = l;
    try {
      return await dest.run(fn);
    } finally {
      if (dest.idle && this.perDestination.get(destinationId) === dest) this.perDestination.delete(destinationId);
    }
  }

  /** `fn` in a slot of the overall limit. */
  inOverall<T>(fn: () => Promise<T>): Promise<T> {
    return this.overall.run(fn);
  }
}
