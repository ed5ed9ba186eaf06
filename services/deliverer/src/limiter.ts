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
 * A share of a limit: `fraction` of `limit` (rounded down), never below SHARE_FLOOR (or the
 * whole limit when that is smaller): with a small limit a share rounding to one or two would
 * serialize every destination.
 */
export const SHARE_FLOOR = 4;
export function shareOf(limit: number, fraction: number): number {
  return Math.min(limit, Math.max(Math.floor(fraction * limit), SHARE_FLOOR));
}

/** The in-flight slots a destination of this `max_concurrency` has as its own: the smaller of it and its share of `maxInFlight`. */
export function ownSlots(maxConcurrency: number, maxInFlight: number, share: number): number {
  return Math.max(1, Math.min(maxConcurrency, shareOf(maxInFlight, share)));
}

/** Fractions of the overall limit one destination and one tenant may hold (1: no bound beyond the overall limit). */
export interface Shares {
  destination: number;
  tenant: number;
}

/** A request for an overall slot: whether it would be its destination's own (asked each time it could go), and what to do once granted, before anything else runs. */
export interface SlotRequest {
  own(): boolean;
  granted(own: boolean): void;
}

/**
 * The overall in-flight slots, with a reserve: a request of a destination already holding
 * its share (a borrower) is let in only while more than `reserve` slots stay free after it;
 * one within its share (its own) takes any free slot. So a destination alone may use all but
 * the reserve (work-conserving: a single busy destination is not held to its share), and a
 * destination that starts sending while another holds the rest finds the reserve free.
 * Whether a waiting request is its destination's own is asked again whenever a slot frees
 * (one of its destination's requests may have finished meanwhile); waiters that may go are
 * served in arrival order, and one that may not does not hold up those behind it.
 */
export class SharedSlots {
  private active = 0;
  private readonly waiting: { r: SlotRequest; go: () => void }[] = [];

  constructor(
    readonly limit: number,
    private readonly reserve: number,
  ) {}

  get held(): number {
    return this.active;
  }

  /** Grants `r` a slot now if it fits: counted, `granted` called; else false. */
  private tryGrant(r: SlotRequest): boolean {
    if (this.active >= this.limit) return false;
    const own = r.own();
    if (!own && this.active >= this.limit - this.reserve) return false;
    this.active++;
    r.granted(own);
    return true;
  }

  acquire(r: SlotRequest): Promise<void> {
    // A waiter that could go was let go when the slot it needed freed: a new request that
    // fits now overtakes none that could.
    if (this.tryGrant(r)) return Promise.resolve();
    return new Promise((go) => this.waiting.push({ r, go }));
  }

  release(): void {
    this.active--;
    for (let i = 0; i < this.waiting.length && this.active < this.limit; ) {
      const w = this.waiting[i]!;
      if (!this.tryGrant(w.r)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      w.go();
    }
  }
}

/**
 * One limiter per destination (its `max_concurrency`), then one per tenant (its share:
 * DELIVERER_TENANT_MAX_SHARE), inside the overall slots (SharedSlots). A destination's
 * requests beyond its share of the overall limit (DELIVERER_DESTINATION_MAX_SHARE) borrow:
 * they go only while more than one share of the slots stays free. Slots are taken in that
 * order, each only once the one before is held: a request waiting for its destination's slot
 * (a slow destination's backlog) holds neither a tenant's nor an overall one; a slow
 * destination holds at most all but the reserve, and another destination's requests find the
 * reserve free, while a single busy destination still uses all but the reserve. A limiter is
 * dropped when idle, so the maps hold only active destinations and tenants.
 */
export class ConcurrencyLimits {
  private readonly perDestination = new Map<string, Limiter>();
  private readonly perTenant = new Map<string, Limiter>();
  /** Requests of each destination holding an overall slot as its own (within its share). */
  private readonly owning = new Map<string, number>();
  private readonly overall: SharedSlots;
  /** A destination's share of the overall limit: beyond it, its requests borrow (see SharedSlots). */
  readonly destinationCap: number;
  /** Requests in flight one tenant may have at most (the overall limit when its share is 1; never below one destination's). */
  readonly tenantCap: number;

  constructor(
    maxInFlight: number,
    private readonly shares: Shares = { destination: 1, tenant: 1 },
  ) {
    this.destinationCap = shareOf(maxInFlight, shares.destination);
    // A share of the whole limit reserves nothing: one destination may hold every slot.
    this.overall = new SharedSlots(maxInFlight, this.destinationCap >= maxInFlight ? 0 : this.destinationCap);
    this.tenantCap = Math.max(shareOf(maxInFlight, shares.tenant), this.destinationCap);
  }

  /** The requests a destination of this `max_concurrency` is sure of here: the smaller of it and the destination's share. */
  capFor(maxConcurrency: number): number {
    return ownSlots(maxConcurrency, this.overall.limit, this.shares.destination);
  }

  /** `fn` in a slot of the destination and, within it, one of its tenant's and one of the overall limit. */
  run<T>(destinationId: string, limit: number, fn: () => Promise<T>, tenantId?: string): Promise<T> {
    return this.inDestination(destinationId, limit, () => this.inOverall(fn, tenantId, destinationId));
  }

  /**
   * `fn` in a slot of the destination only (at most its `max_concurrency` at once, and never
   * more than the overall limit): for what may wait long (a Redis call) without holding a
   * slot other destinations share. It takes the tenant's and the overall one itself (inOverall).
   */
  async inDestination<T>(destinationId: string, limit: number, fn: () => Promise<T>): Promise<T> {
    return this.inMap(this.perDestination, destinationId, Math.max(1, Math.min(limit, this.overall.limit)), fn);
  }

  /**
   * `fn` in a slot of its tenant's share (when a tenant is named and its share is below the
   * overall limit), then in an overall slot: its own when its destination holds less than
   * its share, else a borrowed one (SharedSlots).
   */
  inOverall<T>(fn: () => Promise<T>, tenantId?: string, destinationId?: string): Promise<T> {
    const slot = (): Promise<T> => this.inOverallSlot(fn, destinationId);
    if (tenantId === undefined || this.tenantCap >= this.overall.limit) return slot();
    return this.inMap(this.perTenant, tenantId, this.tenantCap, slot);
  }

  private async inOverallSlot<T>(fn: () => Promise<T>, destinationId: string | undefined): Promise<T> {
    // Own or borrowed is decided when the slot is granted (synchronously, so requests granted
    // together are told apart), from how many of its destination's requests hold own slots.
    let own = false;
    const count = (d: string, by: number): void => {
      const n = (this.owning.get(d) ?? 0) + by;
      if (n <= 0) this.owning.delete(d);
      else this.owning.set(d, n);
    };
    await this.overall.acquire({
      own: () => destinationId === undefined || (this.owning.get(destinationId) ?? 0) < this.destinationCap,
      granted: (isOwn) => {
        own = isOwn;
        if (own && destinationId !== undefined) count(destinationId, 1);
      },
    });
    try {
      return await fn();
    } finally {
      if (own && destinationId !== undefined) count(destinationId, -1);
      this.overall.release();
    }
  }

  private async inMap<T>(map: Map<string, Limiter>, key: string, limit: number, fn: () => Promise<T>): Promise<T> {
    let l = map.get(key);
    if (!l) map.set(key, (l = new Limiter(limit)));
    l.limit = limit;
    const held = l;
    try {
      return await held.run(fn);
    } finally {
      if (held.idle && map.get(key) === held) map.delete(key);
    }
  }
}
