import type { Pool } from '@hookline/db';
import { withTryLock } from '@hookline/db';
import { closeDeletedOwnersDeliveries } from '@hookline/delivery';

// The janitor: closes open deliveries (pending, failed, replaying) of DELETED destinations
// and DELETED flows, exactly as the delete does (closeOpenSql in @hookline/delivery, one
// definition): `exhausted`, held false, lease dropped, last_error destination_deleted: … /
// flow_deleted: …, events rolled up by record_delivery_outcomes.
//
// The delete closes what is open when it commits; nothing else would ever touch a delivery
// that appears afterwards (the claim and the recovery sweep need an ACTIVE destination and
// flow, the DLQ purge takes only exhausted rows): a router that routes from a stale flow
// cache (5 s TTL, pub/sub invalidation) inserts plain `pending` rows for a destination or
// flow that was just disabled and deleted, and a replay or retry that raced the delete
// could reopen one (they lock the destination and flow rows FOR SHARE now, so they should
// not; this is the safety net). Such rows are closed within one JANITOR_INTERVAL_MS.
//
// One replica at a time (advisory try-lock); each run closes at most `batchSize` per kind,
// one transaction per kind (rows locked in id order, locked ones skipped: a row someone holds is
// taken at the next run), so a big backlog is closed over several runs.

export interface JanitorInput {
  /** Deliveries closed per run at most, for DELETED destinations and again for DELETED flows. */
  batchSize: number;
  /** Only owners deleted within this many ms; null for every DELETED owner (a full pass). */
  deletedWithinMs: number | null;
}

export interface JanitorResult {
  destination: number;
  flow: number;
}

export const JANITOR_BATCH_SIZE = 1000;
/** After a full pass, owners deleted this recently: far past a flow cache's staleness. */
export const JANITOR_RECENT_MS = 15 * 60_000;

/** One janitor run; null when another replica holds the lock. */
export async function closeDeletedDeliveries(pool: Pool, input: JanitorInput = { batchSize: JANITOR_BATCH_SIZE, deletedWithinMs: null }): Promise<JanitorResult | null> {
  // Destinations, then flows, each in its own transaction: each roll-up locks its events in
  // id order, and two roll-ups in one transaction could take them out of order.
  const destination = await withTryLock(pool, 'hookline-deliverer-janitor', (client) => closeDeletedOwnersDeliveries(client, 'destination', input.batchSize, input.deletedWithinMs));
  if (destination === null) return null;
  const flow = await withTryLock(pool, 'hookline-deliverer-janitor', (client) => closeDeletedOwnersDeliveries(client, 'flow', input.batchSize, input.deletedWithinMs));
  return { destination, flow: flow ?? 0 };
}

/**
 * The janitor as the deliverer runs it: full passes (every DELETED owner, which also closes
 * what deletes made before the janitor existed left open) until one run closes less than a
 * batch of each kind, then only owners deleted within JANITOR_RECENT_MS.
 */
export function createJanitor(pool: Pool, batchSize = JANITOR_BATCH_SIZE): () => Promise<JanitorResult | null> {
  let full = true;
  return async () => {
    const r = await closeDeletedDeliveries(pool, { batchSize, deletedWithinMs: full ? null : JANITOR_RECENT_MS });
    if (r && r.destination < batchSize && r.flow < batchSize) full = false;
    return r;
  };
}
