import { ownSlots, shareOf, type Shares } from './limiter';

/** What a claimed delivery is counted by. */
export interface ShareItem {
  d: { destinationId: string; tenantId: string };
  settings: { maxConcurrency: number };
}

export interface ClaimShareOptions {
  /** DELIVERER_MAX_CLAIMED. */
  maxClaimed: number;
  /** DELIVERER_MAX_IN_FLIGHT. */
  maxInFlight: number;
  shares: Shares;
  /** Ids a chunk claims at most (CLAIM_CHUNK in deliver-batch.ts, 100). */
  chunk?: number;
}

/** Deliveries over a share are due again after at least this (ms)… */
export const OVER_SHARE_MIN_DELAY_MS = 1_000;
/** …and at most this. */
export const OVER_SHARE_MAX_DELAY_MS = 30_000;

interface Held {
  n: number;
  /** Moving average of its requests' durations (ms), while it holds any; null: none completed yet. */
  avgMs: number | null;
}

/**
 * The process's claimed deliveries counted per destination and per tenant, each bounded
 * by its share of DELIVERER_MAX_CLAIMED (DELIVERER_DESTINATION_MAX_SHARE,
 * DELIVERER_TENANT_MAX_SHARE; shareOf: never below 4 unless the budget is smaller); a
 * tenant's never below one destination's. A destination past its share may keep more
 * while more than one share of the budget stays free (borrowLimit).
 *
 * Without it, a slow destination's backlog held the whole claim budget while it waited
 * for the destination's slots, and every other tenant's deliveries waited for the budget.
 * Deliveries beyond a share are given back unsent, without an attempt (as the circuit and
 * the rate limit give theirs back), due again when the destination's claimed backlog is
 * likely half sent: its requests' average duration × the rounds of its in-flight cap that
 * backlog takes, ÷ 2, between OVER_SHARE_MIN_DELAY_MS and OVER_SHARE_MAX_DELAY_MS (so a
 * slow destination's surplus is not claimed and given back every second). The maps hold
 * only destinations and tenants with deliveries claimed.
 */
export class ClaimShares {
  private readonly destinations = new Map<string, Held>();
  private readonly tenants = new Map<string, number>();
  /** Deliveries counted here in all. */
  private total = 0;
  /**
   * Claimed deliveries in all up to which a destination past its share may still keep
   * more: the budget less one share and one chunk. So a destination alone is not held to
   * its share (as SharedSlots lends in-flight slots), and the budget always has a chunk's
   * room beside a share: the budget is taken in arrival order, chunk by chunk, and a chunk
   * of the busy destination waiting at its head for room (its claims then given back) would
   * hold up every other destination's chunk behind it.
   */
  private readonly borrowLimit: number;

  /** Deliveries one destination may hold claimed. */
  readonly destinationCap: number;
  /** Deliveries one tenant may hold claimed (all its destinations together). */
  readonly tenantCap: number;
  /**
   * The most ids a chunk may claim at once: what the budget has beside one destination's
   * share. The budget is taken in arrival order, each chunk's whole; a chunk larger than
   * that would wait, while a slow destination holds its share, for the destination to send
   * some, and every chunk behind it, any destination's, with it. (The default, 1024 − 256,
   * is more than a chunk's 100.)
   */
  readonly chunkMax: number;

  constructor(private readonly o: ClaimShareOptions) {
    this.destinationCap = shareOf(o.maxClaimed, o.shares.destination);
    this.tenantCap = Math.max(shareOf(o.maxClaimed, o.shares.tenant), this.destinationCap);
    // A share that is the whole budget (1, or a budget of 4 or less) has nothing beside it.
    this.chunkMax = this.destinationCap >= o.maxClaimed ? o.maxClaimed : o.maxClaimed - this.destinationCap;
    this.borrowLimit = this.destinationCap >= o.maxClaimed ? o.maxClaimed : Math.max(0, o.maxClaimed - this.destinationCap - Math.min(o.chunk ?? 100, this.chunkMax));
  }


  /** Held right now by a destination (tests, metrics). */
  heldBy(destinationId: string): number {
    return this.destinations.get(destinationId)?.n ?? 0;
  }

  /**
   * Counts `items` (just claimed), in order, while their destination and tenant are within
   * their shares: those are `kept` (release each once it is no longer claimed); the others
   * are `over`, due again at `dueAt` (ms epoch), one instant per destination.
   */
  take<T extends ShareItem>(items: T[], now = Date.now()): { kept: T[]; over: { item: T; dueAt: number }[] } {
    const kept: T[] = [];
    const over: { item: T; dueAt: number }[] = [];
    const dueAt = new Map<string, number>();
    for (const item of items) {
      const { destinationId, tenantId } = item.d;
      const held = this.destinations.get(destinationId) ?? { n: 0, avgMs: null };
      const tenantHeld = this.tenants.get(tenantId) ?? 0;
      if ((held.n < this.destinationCap || this.total < this.borrowLimit) && tenantHeld < this.tenantCap) {
        held.n++;
        this.total++;
        this.destinations.set(destinationId, held);
        this.tenants.set(tenantId, tenantHeld + 1);
        kept.push(item);
        continue;
      }
      let due = dueAt.get(destinationId);
      if (due === undefined) dueAt.set(destinationId, (due = now + this.overDelay(held, ownSlots(item.settings.maxConcurrency, this.o.maxInFlight, this.o.shares.destination))));
      over.push({ item, dueAt: due });
    }
    return { kept, over };
  }

  /** One of `kept` is no longer claimed (sent and recorded, or given back). */
  release(item: ShareItem): void {
    const { destinationId, tenantId } = item.d;
    const held = this.destinations.get(destinationId);
    if (held) {
      held.n--;
      this.total--;
      if (held.n <= 0) this.destinations.delete(destinationId);
    }
    const t = (this.tenants.get(tenantId) ?? 0) - 1;
    if (t <= 0) this.tenants.delete(tenantId);
    else this.tenants.set(tenantId, t);
  }

  /** A request to the destination took `durationMs` (for when its surplus is due again). */
  observe(destinationId: string, durationMs: number): void {
    const held = this.destinations.get(destinationId);
    if (held) held.avgMs = held.avgMs === null ? durationMs : held.avgMs + (durationMs - held.avgMs) * 0.2;
  }

  private overDelay(held: Held, inFlightCap: number): number {
    if (held.avgMs === null) return OVER_SHARE_MIN_DELAY_MS;
    const halfDrained = (held.avgMs * Math.ceil(held.n / inFlightCap)) / 2;
    return Math.round(Math.min(OVER_SHARE_MAX_DELAY_MS, Math.max(OVER_SHARE_MIN_DELAY_MS, halfDrained)));
  }
}
