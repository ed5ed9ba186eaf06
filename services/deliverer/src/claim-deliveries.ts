import { hotStatement, type Pool } from '@hookline/db';
import { CLAIMABLE_SQL, flowActiveSql, freeSql, sendContextSelect, type SendContextColumns } from '@hookline/delivery';

/** A delivery this process now holds (leased; its status unchanged), with all it needs to send. */
export interface ClaimedDelivery {
  id: string;
  tenantId: string;
  eventId: string;
  destinationId: string;
  attemptCount: number;
  replayCount: number;
  /** attempt_count at the last replay (null: never replayed since it was recorded; see Round in @hookline/delivery). */
  roundStartAttempt: number | null;
  url: string;
  method: string;
  config: unknown;
  secrets: string[];
  correlationId: string;
  receivedAt: Date;
  eventType: string | null;
  /** null when the retained payload was purged. */
  body: Buffer | null;
  contentType: string | null;
}

interface Row extends SendContextColumns {
  id: string;
  tenant_id: string;
  event_id: string;
  destination_id: string;
  attempt_count: number;
  replay_count: number;
  round_start_attempt: number | null;
}

// One statement: lock the due, unheld rows (skipping rows another claim holds), lease
// them, and return them joined with destination, event and payload. Only direct
// destinations (no cluster: an edge agent delivers those) that are ACTIVE, and only while
// the delivery's flow is ACTIVE (a DISABLED or DELETED flow stops its deliveries, SPEC.md
// lifecycle; re-enabled, the recovery sweep sends them). The lease is the only write (see
// @hookline/delivery lease.ts): an in-place (HOT) update.
//
// The rows are looked up one id at a time (LATERAL, primary key) on purpose: given the ids,
// that plan is always right, while with `id = ANY(...)` the planner, working from stale
// statistics (a table that grew since its last ANALYZE, a destination whose backlog grew),
// chose to scan the destination's whole backlog by the (destination, next_attempt_at)
// index: 100 ms claims in the benchmark, and slower the larger the backlog.
export const CLAIM_SQL = `
WITH cand AS (
  SELECT d.id
  FROM (SELECT DISTINCT unnest($1::text[]) AS id) x
  CROSS JOIN LATERAL (
    SELECT d.id
    FROM deliveries d
    WHERE d.id = x.id
      AND d.status IN (${CLAIMABLE_SQL}) AND ${freeSql('d')}
      AND d.next_attempt_at <= now() + $2::float8 * interval '1 millisecond'
      AND EXISTS (SELECT 1 FROM destinations t WHERE t.id = d.destination_id AND t.cluster_id IS NULL AND t.state = 'ACTIVE')
      AND ${flowActiveSql('d')}
    FOR UPDATE OF d SKIP LOCKED
  ) d
), claimed AS (
  UPDATE deliveries d
  SET lease_until = now() + $3::float8 * interval '1 millisecond', lease_owner = $4, updated_at = now()
  FROM cand WHERE d.id = cand.id
  RETURNING d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.replay_count, d.round_start_attempt
)
${sendContextSelect('claimed')}`;

export interface ClaimInput {
  deliveryIds: string[];
  leaseOwner: string;
  leaseMs: number;
  slackMs: number;
}

/** Deliveries not returned were not claimable (sent already, held by another claim, or not due). */
export async function claimDeliveries(pool: Pool, input: ClaimInput): Promise<ClaimedDelivery[]> {
  if (input.deliveryIds.length === 0) return [];
  const { rows } = await pool.query<Row>(hotStatement('deliverer_claim', CLAIM_SQL, [input.deliveryIds, input.slackMs, input.leaseMs, input.leaseOwner]));
  return rows.map((r) => ({
    id: r.id,
    tenantId: r.tenant_id,
    eventId: r.event_id,
    destinationId: r.destination_id,
    attemptCount: r.attempt_count,
    replayCount: r.replay_count,
    roundStartAttempt: r.round_start_attempt,
    url: r.url,
    method: r.method,
    config: r.config,
    secrets: r.secrets ?? [],
    correlationId: r.correlation_id,
    receivedAt: r.received_at,
    eventType: r.type,
    body: r.body,
    contentType: r.content_type,
  }));
}

/**
 * Gives deliveries back without an attempt (circuit open, rate limit): the lease dropped,
 * due again at `now + delayMs`. The attempt is not consumed.
 */
export async function releaseDeliveries(pool: Pool, leaseOwner: string, items: { id: string; delayMs: number }[]): Promise<void> {
  if (items.length === 0) return;
  await pool.query(
    `UPDATE deliveries d
     SET lease_until = NULL, lease_owner = NULL, next_attempt_at = now() + u.delay * interval '1 millisecond', updated_at = now()
     FROM unnest($1::text[], $2::int[]) AS u(id, delay)
     WHERE d.id = u.id AND d.lease_owner = $3`,
    [items.map((i) => i.id), items.map((i) => Math.max(0, Math.round(i.delayMs))), leaseOwner],
  );
}

/** Extends the lease of the deliveries a claim still holds (long batches outlive one lease). */
export async function renewLeases(pool: Pool, leaseOwner: string, ids: string[], leaseMs: number): Promise<void> {
  await pool.query(
    `UPDATE deliveries SET lease_until = now() + $3::float8 * interval '1 millisecond' WHERE id = ANY($1::text[]) AND lease_owner = $2 AND status IN (${CLAIMABLE_SQL})`,
    [ids, leaseOwner, leaseMs],
  );
}
