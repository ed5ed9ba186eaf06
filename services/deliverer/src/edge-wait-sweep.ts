import type { Pool } from '@hookline/db';
import { CLAIMABLE_SQL, flowActiveSql, freeSql, newLeaseOwner, decide, destinationSettings, recordOutcomes, type DeliveryPolicy, type Outcome, type SendResult } from '@hookline/delivery';
import { withTryLock } from '@hookline/db';

export interface EdgeWaitInput {
  /** A cluster counts as connected while an agent was seen within this window. */
  connectedWindowMs: number;
  /** How long a due delivery waits for an agent before an attempt fails. */
  waitLimitMs: number;
  batchSize: number;
  instanceId: string;
}

interface Row {
  id: string;
  tenant_id: string;
  event_id: string;
  attempt_count: number;
  replay_count: number;
  round_start_attempt: number | null;
  cluster_id: string;
  method: string;
  config: unknown;
  waited_ms: number;
}

// Due deliveries of clusters with no agent connected (never seen, or not within the
// window) that have waited past the limit, counted from when they became due, when the
// last agent was seen, or when a vanished agent's lease expired, whichever is latest.
// They are leased to this sweep (only the lease is written), which records one failed
// attempt each.
export const TAKE_SQL = `
WITH stale AS (
  SELECT d.id, extract(epoch FROM now() - GREATEST(d.next_attempt_at, d.lease_until, c.last_seen_at)) * 1000 AS waited_ms
  FROM deliveries d
  JOIN destinations t ON t.id = d.destination_id
  JOIN clusters c ON c.id = t.cluster_id
  WHERE t.state = 'ACTIVE' AND ${flowActiveSql('d')}
    AND d.status IN (${CLAIMABLE_SQL}) AND ${freeSql('d')}
    AND (c.last_seen_at IS NULL OR c.last_seen_at < now() - $1::float8 * interval '1 millisecond')
    AND GREATEST(d.next_attempt_at, d.lease_until, c.last_seen_at) < now() - $2::float8 * interval '1 millisecond'
  ORDER BY d.next_attempt_at
  LIMIT $3
  FOR UPDATE OF d SKIP LOCKED
), taken AS (
  UPDATE deliveries d SET lease_owner = $4, lease_until = now() + interval '1 minute', updated_at = now()
  FROM stale WHERE d.id = stale.id
  RETURNING d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.replay_count, d.round_start_attempt, stale.waited_ms
)
SELECT k.id, k.tenant_id, k.event_id, k.attempt_count, k.replay_count, k.round_start_attempt, k.waited_ms::float8 AS waited_ms, t.cluster_id, t.method, t.config
FROM taken k JOIN destinations t ON t.id = k.destination_id`;

/**
 * One sweep (skipped while another replica holds the lock): deliveries that waited too
 * long for an edge agent fail an attempt of kind `edge_unavailable`, and from there follow
 * the ordinary policy (retry with backoff, then the DLQ). Returns how many, or null.
 */
export async function sweepEdgeWaits(deps: { pool: Pool; policy: DeliveryPolicy }, input: EdgeWaitInput): Promise<number | null> {
  const leaseOwner = newLeaseOwner(`edge-wait:${input.instanceId}`);
  const rows = await withTryLock(deps.pool, 'hookline-edge-wait', async (client) => {
    const { rows } = await client.query<Row>(TAKE_SQL, [input.connectedWindowMs, input.waitLimitMs, input.batchSize, leaseOwner]);
    return rows;
  });
  if (rows === null) return null;
  const now = new Date();
  const outcomes: Outcome[] = rows.map((r) => {
    const result: SendResult = {
      statusCode: null,
      errorKind: 'edge_unavailable',
      error: `no edge agent of cluster ${r.cluster_id} took the delivery within ${Math.round(r.waited_ms / 1000)} s`,
      responseBody: null,
      responseHeaders: null,
      startedAt: now,
      durationMs: 0,
    };
    const attemptNumber = r.attempt_count + 1;
    const settings = destinationSettings(r.method, r.config, deps.policy.defaults);
    return { deliveryId: r.id, tenantId: r.tenant_id, eventId: r.event_id, attemptNumber, result, decision: decide(settings, deps.policy.backoff, result, attemptNumber, { replayCount: r.replay_count, roundStartAttempt: r.round_start_attempt }) };
  });
  await recordOutcomes(deps.pool, leaseOwner, outcomes, { via: 'edge' });
  return outcomes.length;
}
