import { CLAIMABLE_SQL, RELEASE_SET_SQL, type GivenBack, type LeaseRelease, type ReleaseResult } from '@hookline/delivery';
import type { EdgeCluster } from './edge-auth';
import type { EdgeDeps } from './edge-deps';
import { leasedByAgentSql, leasedByClusterSql } from './lease-owner';

// Every statement here drops only leases still held by the given lease owner (a lease that
// expired and went to another agent, or that was reported, has another owner or none), finds
// the rows by primary key (lease_owner has no index: see @hookline/delivery lease.ts), and
// writes no attempt: nothing was sent, attempt_count stays. The releases keep
// next_attempt_at too, so the delivery is free and due again at once; only the postponement
// of held-back deliveries (POSTPONE_POLL_SQL) moves it. A delivery given back unsent gave
// its destination's gate something it did not use: the releases return each delivery's
// destination (and lease owner), and giveBackToGate returns the rate token it took, if its
// window is still the current one, and frees the probe slot it holds, if it was a half-open
// circuit's probe, so that the next poll or the deliverer sends a probe at once instead of
// after the probe's lease.

/** A work poll's own leases (one lease owner per poll), by the ids it leased. */
export const RELEASE_POLL_SQL = `
UPDATE deliveries d SET ${RELEASE_SET_SQL}
WHERE d.id = ANY($1::text[]) AND d.lease_owner = $2 AND d.status IN (${CLAIMABLE_SQL})
RETURNING d.id, d.destination_id`;

/**
 * A work poll's leases of deliveries it does not hand out because their destination's
 * circuit is open or its rate budget is spent (lease-work.ts): given back as above, with no
 * attempt and attempt_count unchanged, but due again only after each one's delay, as the
 * deliverer postpones what its gate holds back. Otherwise the long-poll would lease them
 * again at once, every EDGE_WORK_POLL_MS. Moving next_attempt_at makes this update a
 * non-HOT one; it happens only while a destination is held back.
 */
export const POSTPONE_POLL_SQL = `
UPDATE deliveries d SET ${RELEASE_SET_SQL}, next_attempt_at = now() + u.delay * interval '1 millisecond'
FROM unnest($1::text[], $2::float8[]) AS u(id, delay)
WHERE d.id = u.id AND d.lease_owner = $3 AND d.status IN (${CLAIMABLE_SQL})
RETURNING d.id`;

/**
 * An agent's releases: each (id, lease_owner) pair, only for leases the caller's cluster
 * took, in its tenant, and only leases that agent took (`edge@<cluster id>:<agent_id>:<hex>`,
 * lease-owner.ts): proven by the lease, not by the destination's current cluster, so a lease
 * whose destination moved since (to another cluster, or to direct delivery) is still given
 * back by its holder, and by no other cluster. An agent id may contain ':', so the prefix
 * alone is not enough: agent `dc-1`'s prefix also starts agent `dc-1:b`'s leases. What
 * follows the prefix must be the random part alone (no ':').
 */
export const RELEASE_AGENT_SQL = `
UPDATE deliveries d SET ${RELEASE_SET_SQL}
FROM unnest($1::text[], $2::text[]) AS u(id, owner), destinations t
WHERE d.id = u.id AND d.lease_owner = u.owner AND d.status IN (${CLAIMABLE_SQL})
  AND t.id = d.destination_id AND ${leasedByClusterSql('d', 't', '$3', '$4')} AND ${leasedByAgentSql('d', '$3', '$5')}
RETURNING d.id, u.owner, d.destination_id`;

/**
 * What deliveries given back unsent took from their destinations' gates, given back with
 * them, in one Redis script call per batch (the keys share the queue prefix's hash tag;
 * Breaker.giveBack):
 *
 * - the rate token each one took, to its destination's current one-second window, but only
 *   when it was taken in that same window (noted per lease owner and window when the poll
 *   took it): a window that is over cannot use it any more, and returning it into a later
 *   window would let that window send more than the limit;
 * - the probe slot of a half-open circuit, only when the delivery given back is the one
 *   holding it: another delivery of that destination given back while a probe is out leaves
 *   the slot alone (no second probe).
 *
 * Fails open: if Redis cannot answer, it is logged, the token stays spent until its window
 * ends and the slot expires with the probe's lease, as they would have; the release itself
 * is not held up. `now` picks the current window (tests pin it).
 */
export async function giveBackToGate(deps: Pick<EdgeDeps, 'breaker' | 'logger'>, items: GivenBack[], now = Date.now()): Promise<void> {
  if (items.length === 0) return;
  try {
    const { probesFreed, tokensReturned } = await deps.breaker.giveBack(items, now);
    if (probesFreed > 0 || tokensReturned > 0) deps.logger.debug('returned what deliveries given back unsent took from their destinations\' gate', { probes_freed: probesFreed, rate_tokens_returned: tokensReturned });
  } catch (err) {
    deps.logger.warn('could not return the probe slots and rate tokens of deliveries given back unsent; they expire', { destinations: new Set(items.map((i) => i.destinationId)).size, error: (err as Error).message });
  }
}

/**
 * Gives back what one work poll leased and could not hand out (its caller left, the api
 * began draining, the response was cut, or the poll failed): at once rather than when the
 * lease expires, with their rate tokens and probe slots (giveBackToGate). Returns the ids
 * released.
 */
export async function releasePollLeases(deps: Pick<EdgeDeps, 'pool' | 'breaker' | 'logger'>, leaseOwner: string, ids: string[], now?: number): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await deps.pool.query<{ id: string; destination_id: string }>(RELEASE_POLL_SQL, [ids, leaseOwner]);
  await giveBackToGate(deps, rows.map((r) => ({ destinationId: r.destination_id, deliveryId: r.id, leaseOwner })), now);
  return rows.map((r) => r.id);
}

/** Gives back what one work poll leased and holds back, due again after `delayMs` each. Returns the ids postponed. */
export async function postponePollLeases(pool: EdgeDeps['pool'], leaseOwner: string, items: { id: string; delayMs: number }[]): Promise<string[]> {
  if (items.length === 0) return [];
  const { rows } = await pool.query<{ id: string }>(POSTPONE_POLL_SQL, [items.map((i) => i.id), items.map((i) => Math.max(0, Math.round(i.delayMs))), leaseOwner]);
  return rows.map((r) => r.id);
}

/**
 * `POST …/releases`: leases an agent gives back unsent (it stops). One result per item, in
 * order: `released`, or `ignored` (`not_leased`) when that lease does not hold the delivery
 * (any more), which changes nothing. The released deliveries give back their rate tokens
 * and probe slots (giveBackToGate; `now` picks the current window, tests pin it).
 */
export async function releaseAgentLeases(deps: EdgeDeps, cluster: Pick<EdgeCluster, 'id' | 'tenantId'>, agentId: string, releases: LeaseRelease[], now?: number): Promise<ReleaseResult[]> {
  const pairs = [...new Map(releases.map((r) => [`${r.delivery_id}\u0000${r.lease_owner}`, r] as const)).values()];
  const { rows } = await deps.pool.query<{ id: string; owner: string; destination_id: string }>(RELEASE_AGENT_SQL, [
    pairs.map((r) => r.delivery_id),
    pairs.map((r) => r.lease_owner),
    cluster.id,
    cluster.tenantId,
    agentId,
  ]);
  await giveBackToGate(deps, rows.map((r) => ({ destinationId: r.destination_id, deliveryId: r.id, leaseOwner: r.owner })), now);
  const released = new Set(rows.map((r) => `${r.id}\u0000${r.owner}`));
  return releases.map((r): ReleaseResult => (released.has(`${r.delivery_id}\u0000${r.lease_owner}`) ? { delivery_id: r.delivery_id, result: 'released' } : { delivery_id: r.delivery_id, result: 'ignored', reason: 'not_leased' }));
}
