import type { Pool } from '@hookline/db';
import { withTryLock } from '@hookline/db';
import { closeDeletedOwnersDeliveries } from '@hookline/delivery';
import { expireHeldDeliveries } from './expire-held';

// The janitor. Three kinds of open deliveries (pending, failed, replaying) go to the DLQ,
// all with the delete's close (closeSql in @hookline/delivery, one definition):
// `exhausted`, held false, lease dropped, events rolled up by record_delivery_outcomes.
//
// - `destination`, `flow`: those of DELETED destinations and DELETED flows (last_error
//   destination_deleted: … / flow_deleted: …). The api's delete closes at most
//   DELETE_CLOSE_INLINE_LIMIT of them in its transaction and leaves the rest here. After
//   the delete, nothing else touches them: the claim (claim-deliveries.ts CLAIM_SQL), the
//   recovery sweep (recover-deliveries.ts SWEEP_SQL), the edge leases (the api's
//   edge/lease-work.ts LEASE_SQL) and the edge wait sweep (edge-wait-sweep.ts TAKE_SQL)
//   need `t.state = 'ACTIVE'` and a flow that is ACTIVE (flowActiveSql), retry an ACTIVE
//   or DISABLED destination and an ACTIVE flow, replay both ACTIVE, and the DLQ purge
//   takes only exhausted rows. A router
//   that routes from a stale flow cache (5 s TTL, pub/sub invalidation) also inserts plain
//   `pending` rows for a destination or flow just disabled and deleted, and a replay or
//   retry that raced the delete could reopen one (they lock the destination and flow rows
//   FOR SHARE now, so they should not; this is the safety net).
// - `held`: deliveries held (by a DISABLED destination) for more than HELD_RETENTION_MS,
//   counted from held_since (expire-held.ts), last_error held_expired: ….
//
// One replica at a time (advisory try-lock, taken again by each batch's transaction). Each
// kind is closed in batches of `batchSize`, one transaction each (rows locked in id order,
// locked ones skipped: a row someone holds is taken at a later run; each roll-up locks its
// events in id order, and two roll-ups in one transaction could take them out of order):
// a kind goes on while its batches come back full, up to `maxBatches` per run.

export interface JanitorInput {
  /** Deliveries closed per batch (one transaction), per kind. */
  batchSize: number;
  /** Batches per kind per run at most (a batch that comes back less than full ends its kind's run). */
  maxBatches: number;
  /** Only owners deleted within this many ms; null for every DELETED owner (a full pass). */
  deletedWithinMs: number | null;
  /** Deliveries held (held_since) longer ago than this go to the DLQ; null: none do. */
  heldRetentionMs: number | null;
}

export interface JanitorResult {
  destination: number;
  flow: number;
  held: number;
  /** The last batch of DELETED destinations' or flows' deliveries was full: more may be left. */
  more: boolean;
}

export const JANITOR_BATCH_SIZE = 1000;
/**
 * Batches per kind per run at most: 20,000 deliveries of a kind, about 2 s of closing
 * (10 s per 100,000 on the development machine) and at most ~6 s for the three kinds,
 * well within the 60 s JANITOR_INTERVAL_MS, so that a large backlog (a delete beyond its
 * inline limit, an expiry after a long DISABLED spell) is closed within minutes while one
 * run stays short (each batch is its own transaction; runs never overlap).
 */
export const JANITOR_MAX_BATCHES = 20;
/** After a full pass, owners deleted this recently: far past a flow cache's staleness. */
export const JANITOR_RECENT_MS = 15 * 60_000;

const LOCK = 'hookline-deliverer-janitor';

type Batch = (client: Pick<Pool, 'query'>, limit: number) => Promise<number>;

/** Batches of one kind while they come back full (up to maxBatches); null when another replica holds the lock at the first. */
async function batches(pool: Pool, batch: Batch, input: JanitorInput): Promise<{ closed: number; full: boolean } | null> {
  let closed = 0;
  for (let i = 0; i < input.maxBatches; i++) {
    const n = await withTryLock(pool, LOCK, (client) => batch(client, input.batchSize));
    // Another replica took the lock between two batches: it carries on, perhaps looking only
    // at recent owners; count the kind as not finished, so this replica's next run is a full
    // pass (a backlog older than JANITOR_RECENT_MS is then not stranded).
    if (n === null) return i === 0 ? null : { closed, full: true };
    closed += n;
    if (n < input.batchSize) return { closed, full: false };
  }
  return { closed, full: true };
}

/** One janitor run; null when another replica holds the lock. */
export async function runJanitor(pool: Pool, options: Partial<JanitorInput> = {}): Promise<JanitorResult | null> {
  const input: JanitorInput = {
    batchSize: options.batchSize ?? JANITOR_BATCH_SIZE,
    maxBatches: options.maxBatches ?? JANITOR_MAX_BATCHES,
    deletedWithinMs: options.deletedWithinMs ?? null,
    heldRetentionMs: options.heldRetentionMs ?? null,
  };
  // DELETED owners first: their held rows are closed as destination_deleted, not expired.
  const destination = await batches(pool, (c, n) => closeDeletedOwnersDeliveries(c, 'destination', n, input.deletedWithinMs), input);
  if (destination === null) return null;
  const flow = await batches(pool, (c, n) => closeDeletedOwnersDeliveries(c, 'flow', n, input.deletedWithinMs), input);
  const retention = input.heldRetentionMs;
  const held = retention === null ? null : await batches(pool, (c, n) => expireHeldDeliveries(c, n, retention), input);
  return { destination: destination.closed, flow: flow?.closed ?? 0, held: held?.closed ?? 0, more: destination.full || (flow?.full ?? true) };
}

export interface JanitorOptions {
  heldRetentionMs: number;
  batchSize?: number;
  maxBatches?: number;
}

/**
 * The janitor as the deliverer runs it. A full pass (every DELETED owner, which also closes
 * what deletes made before the janitor existed left open) first; once a run leaves no
 * full batch of DELETED owners' deliveries, only owners deleted within JANITOR_RECENT_MS
 * (stale routers' rows appear within seconds; the rest of a delete's backlog is taken
 * while it is recent). A run whose last batch of a kind was still full (a backlog larger
 * than one run closes) makes the next run a full pass again, and so on until the backlog
 * is gone: a backlog that takes longer than JANITOR_RECENT_MS to close is not stranded.
 */
export function createJanitor(pool: Pool, options: JanitorOptions): () => Promise<JanitorResult | null> {
  let full = true;
  return async () => {
    const r = await runJanitor(pool, { ...options, deletedWithinMs: full ? null : JANITOR_RECENT_MS });
    if (r) full = r.more;
    return r;
  };
}
