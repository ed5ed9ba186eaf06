import {
  CLAIMABLE_SQL,
  decide,
  destinationSettings,
  pickHeaders,
  recordHealthAtOnce,
  recordOutcomes,
  truncateBody,
  type AttemptReport,
  type ErrorKind,
  type Outcome,
  type ReportResult,
  type SendResult,
} from '@hookline/delivery';
import type { EdgeCluster } from './edge-auth';
import type { EdgeDeps } from './edge-deps';
import { leasedByClusterSql } from './lease-owner';

interface Held {
  id: string;
  destination_id: string;
  tenant_id: string;
  event_id: string;
  attempt_count: number;
  replay_count: number;
  round_start_attempt: number | null;
  method: string;
  config: unknown;
}

// Kinds an agent may report for a request that got no answer, listed rather than derived
// from ERROR_KINDS: a kind added there for the service's own verdicts (as
// `signing_unavailable` was) must not become one an agent can set. An agent's `ssrf_blocked`
// (a target its EDGE_ALLOWED_TARGETS or link-local rule refused) is recorded as `connect`:
// it depends on that agent's settings and DNS, not on the URL, so it must neither exhaust
// the delivery at once (another agent may deliver it) nor escape the destination's circuit.
const NETWORK_KINDS = new Set<string>(['timeout', 'dns', 'connect', 'tls', 'reset', 'refused'] satisfies ErrorKind[]);

/**
 * An agent's report as the attempt the deliverer would have recorded: the error kind
 * follows from the status the same way, the body and headers are cut the same way.
 */
export function toSendResult(r: AttemptReport, bodyLimit: number): SendResult {
  const s = r.status_code;
  const answered = s !== null;
  const errorKind: ErrorKind | null = answered
    ? s >= 200 && s < 300
      ? null
      : s >= 300 && s < 400
        ? 'redirect'
        : 'http_error'
    : NETWORK_KINDS.has(r.error_kind ?? '')
      ? (r.error_kind as ErrorKind)
      : 'connect';
  return {
    statusCode: s,
    errorKind,
    error: !errorKind ? null : answered ? `HTTP ${s}` : (r.error ?? errorKind).slice(0, 500),
    responseBody: r.response_body === null || r.response_body === undefined ? null : truncateBody(Buffer.from(r.response_body, 'utf8'), bodyLimit),
    responseHeaders: r.response_headers ? pickHeaders(r.response_headers) : null,
    startedAt: new Date(r.started_at),
    durationMs: r.duration_ms,
  };
}

const HELD_SQL = `
SELECT d.id, d.destination_id, d.tenant_id, d.event_id, d.attempt_count, d.replay_count, d.round_start_attempt, t.method, t.config
FROM deliveries d JOIN destinations t ON t.id = d.destination_id
WHERE d.id = ANY($1::text[]) AND d.lease_owner = $3 AND d.status IN (${CLAIMABLE_SQL})
  AND ${leasedByClusterSql('d', 't', '$2', '$4')}`;

/**
 * Records reported attempts exactly like direct ones (same retry policy, DLQ and event
 * statuses, in @hookline/delivery). Only while the reporting lease still holds the
 * delivery: a repeated report, or one whose lease went to another agent, is `ignored`
 * and changes nothing. The lease proves the cluster (lease-owner.ts), not the destination's
 * current cluster: a destination moved while the agent sent still gets the attempt
 * recorded. The attempts recorded then feed their destinations' circuits, as the
 * deliverer's do (failures open a circuit, a success closes it, a destination failing
 * without a success for DESTINATION_DISABLE_AFTER_MS is disabled): every destination of
 * the batch in one Redis round trip, after the attempts are written. An ignored report
 * counts for nothing, so a repeated report cannot count twice.
 */
export async function recordReports(deps: EdgeDeps, cluster: Pick<EdgeCluster, 'id' | 'tenantId'>, reports: AttemptReport[]): Promise<ReportResult[]> {
  const unique = [...new Map(reports.map((r) => [r.delivery_id, r] as const)).values()];
  const byOwner = new Map<string, AttemptReport[]>();
  for (const r of unique) byOwner.set(r.lease_owner, [...(byOwner.get(r.lease_owner) ?? []), r]);
  const recorded = new Map<string, ReportResult>();
  const health: { destinationId: string; result: SendResult }[] = [];
  try {
    for (const [owner, group] of byOwner) {
      const { rows } = await deps.pool.query<Held>(HELD_SQL, [group.map((r) => r.delivery_id), cluster.id, owner, cluster.tenantId]);
      const held = new Map(rows.map((h) => [h.id, h]));
      const outcomes: Outcome[] = [];
      for (const r of group) {
        const h = held.get(r.delivery_id);
        if (!h) continue;
        const result = toSendResult(r, deps.config.RESPONSE_BODY_LIMIT);
        const settings = destinationSettings(h.method, h.config, deps.policy.defaults);
        const attemptNumber = h.attempt_count + 1;
        outcomes.push({ deliveryId: h.id, tenantId: h.tenant_id, eventId: h.event_id, attemptNumber, result, decision: decide(settings, deps.policy.backoff, result, attemptNumber, { replayCount: h.replay_count, roundStartAttempt: h.round_start_attempt }) });
      }
      for (const o of await recordOutcomes(deps.pool, owner, outcomes, { via: 'edge', onlyHeld: true })) {
        recorded.set(o.deliveryId, { delivery_id: o.deliveryId, result: 'recorded', attempt: o.attemptNumber, status: o.decision.status });
        health.push({ destinationId: held.get(o.deliveryId)!.destination_id, result: o.result });
      }
    }
  } finally {
    // Never throws: the attempts are written, and the agent must not send the batch again.
    // Also when a later lease owner's write failed: what was written before it stays (the
    // agent's retry of the batch finds it ignored), so its circuits hear of it now or never.
    await recordHealthAtOnce(deps, health);
  }
  return reports.map((r) => recorded.get(r.delivery_id) ?? { delivery_id: r.delivery_id, result: 'ignored', reason: 'not_leased' });
}
