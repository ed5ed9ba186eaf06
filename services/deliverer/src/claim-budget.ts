/**
 * How many deliveries this process holds claimed at once (DELIVERER_MAX_CLAIMED). A deliver
 * job can name thousands of deliveries (a route job of 500 events at fan-out 5 makes one of
 * 2,500); claimed all at once, 64 such jobs would hold every body, header and lease in
 * memory while the sender works through them at its own pace, and the leases would run
 * down while they wait. Jobs are claimed in chunks instead, each waiting here for room.
 * Waiters are served in arrival order (a large chunk is not overtaken for ever by small ones).
 */
export class ClaimBudget {
  private held = 0;
  private readonly waiting: { n: number; go: () => void }[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`claim budget must be a positive integer (got ${limit})`);
  }

  /** Deliveries held claimed right now. */
  get inUse(): number {
    return this.held;
  }

  /** Runs `fn` once `n` deliveries fit (at most the whole budget), then gives them back. */
  async run<T>(n: number, fn: () => Promise<T>): Promise<T> {
    const take = Math.max(0, Math.min(n, this.limit));
    await this.acquire(take);
    try {
      return await fn();
    } finally {
      this.release(take);
    }
  }

  private acquire(n: number): Promise<void> {
    if (this.waiting.length === 0 && this.held + n <= this.limit) {
      this.held += n;
      return Promise.resolve();
    }
    return new Promise((go) => this.waiting.push({ n, go }));
  }

  private release(n: number): void {
    this.held -= n;
    while (this.waiting.length > 0 && this.held + this.waiting[0]!.n <= this.limit) {
      const next = this.waiting.shift()!;
      this.held += next.n;
      next.go();
    }
  }
}

/** `xs` in consecutive pieces of at most `size`. */
export function chunks<T>(xs: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}
