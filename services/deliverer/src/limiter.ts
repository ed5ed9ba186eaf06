/** A counting semaphore: at most `limit` holders; waiters are served in arrival order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(public limit: number) {}

  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (next) next();
    else this.active--;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
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

  async run<T>(destinationId: string, limit: number, fn: () => Promise<T>): Promise<T> {
    let l = this.perDestination.get(destinationId);
    if (!l) this.perDestination.set(destinationId, (l = new Limiter(limit)));
    l.limit = limit;
    const dest = l;
    try {
      return await dest.run(() => this.overall.run(fn));
    } finally {
      if (dest.idle && this.perDestination.get(destinationId) === dest) this.perDestination.delete(destinationId);
    }
  }
}
