import {
  CLAIMABLE_SQL,
  flowActiveSql,
  freeSql,
  basicAuth,
  buildHeaders,
  sendContextSelect,
  type SendContextColumns,
  decide,
  destinationSettings,
  gateAtOnce,
  notSent,
  openSecrets,
  recordHealthAtOnce,
  recordOutcomes,
  type DestinationSettings,
  type Gated,
  type Outcome,
  type SendResult,
  type WorkItem,
  warnUnsendableHeaders,
} from '@hookline/delivery';
import type { EdgeCluster } from './edge-auth';
import type { EdgeDeps } from './edge-deps';
import { giveBackToGate, postponePollLeases, releasePollLeases } from './release-leases';

interface Row extends SendContextColumns {
  id: string;
  tenant_id: string;
  event_id: string;
  destination_id: string;
  attempt_count: number;
  replay_count: number;
  round_start_attempt: number | null;
  lease_until: Date;
}

// Competing consumers: lock the cluster's due deliveries that no live lease holds
// (skipping rows another agent's lease statement holds), lease them to this poll, and
// return them with what sending needs. A row whose lease expired (an agent that vanished)
// is free again. Only the lease is written (see @hookline/delivery lease.ts). As in the
// deliverer's claim, a delivery whose flow is DISABLED or DELETED waits (SPEC.md
// lifecycle) and is handed out once the flow is ACTIVE again.
//
// A poll authenticates once and leases for up to EDGE_MAX_WAIT_SECONDS: each statement
// leases only while the cluster is still ACTIVE and the key the poll was signed with ($6,
// as stored: EdgeCluster.signedWith) is still valid, as the current key or as the previous
// one within its grace period. So a disable, a delete or a rotation that revokes that key
// (grace 0, a later rotation, the grace period over) stops a poll already open from its
// next statement on, as it refuses the cluster's next request (edge-auth.ts). The answer
// tells the two apart in one round trip: `signer` has the one row of a cluster still
// valid, and the final select keeps it (LEFT JOIN): no row at all when the cluster is no
// longer valid (nothing was leased), one row of NULLs when it is but nothing was due,
// else one row per delivery.
export const LEASE_SQL = `
WITH signer AS (
  SELECT k.id FROM clusters k
  WHERE k.id = $1 AND k.tenant_id = $2 AND k.state = 'ACTIVE'
    AND (k.key_encrypted = $6 OR (k.previous_key_encrypted = $6 AND k.previous_key_expires_at > now()))
), cand AS (
  SELECT d.id FROM deliveries d JOIN destinations t ON t.id = d.destination_id
  WHERE EXISTS (SELECT 1 FROM signer)
    AND t.cluster_id = $1 AND t.tenant_id = $2 AND t.state = 'ACTIVE' AND ${flowActiveSql('d')}
    AND d.status IN (${CLAIMABLE_SQL}) AND d.next_attempt_at <= now() AND ${freeSql('d')}
  ORDER BY d.next_attempt_at
  LIMIT $3
  FOR UPDATE OF d SKIP LOCKED
), leased AS (
  UPDATE deliveries d
  SET lease_until = now() + $4::float8 * interval '1 millisecond', lease_owner = $5, updated_at = now()
  FROM cand WHERE d.id = cand.id
  RETURNING d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.replay_count, d.round_start_attempt, d.lease_until
)
SELECT s.* FROM signer LEFT JOIN (${sendContextSelect('leased')}) s ON true
ORDER BY s.id`;

/** A lease covers the send (the destination's timeout) plus half a lease to report it. */
export function leaseMsFor(leaseMs: number, timeoutMs: number): number {
  return Math.max(leaseMs, timeoutMs + Math.ceil(leaseMs / 2));
}

// Signed here, at lease time, and not by the agent: the agent never holds a destination
// secret (packages/edge README). That is honest about the signing time because the agent
// does not queue leased work: it asks for at most its free room and starts every item as
// the work response arrives (packages/edge agent.ts, one connection pool per origin with
// no connection limit), so the signed timestamp is the lease plus the response's transit,
// far inside a receiver's tolerance (Standard Webhooks: 5 min). Work leased again after a
// lease expired is signed again.
function toItem(r: Row & { body: Buffer }, secrets: string[], leaseOwner: string, leaseUntil: Date, settings: DestinationSettings): WorkItem {
  const url = new URL(r.url);
  const auth = basicAuth(url);
  url.username = '';
  url.password = '';
  const headers = buildHeaders({
    deliveryId: r.id,
    eventId: r.event_id,
    eventType: r.type,
    correlationId: r.correlation_id,
    receivedAt: r.received_at,
    body: r.body,
    contentType: r.content_type,
    secrets,
    customHeaders: settings.headers,
  });
  return {
    id: r.id,
    lease_owner: leaseOwner,
    url: Object.keys(auth).length > 0 ? url.toString() : r.url,
    method: settings.method,
    headers: { ...auth, ...headers },
    body_base64: r.body.toString('base64'),
    timeout_ms: settings.timeoutMs,
    lease_until: leaseUntil.toISOString(),
  };
}

/** What a poll's lease statement led to. */
export interface Leased {
  /** Handed out to the agent, ready to send. */
  deliveries: WorkItem[];
  /** Leased but held back (circuit open, rate budget spent): given back, due later. */
  heldBack: number;
  /**
   * The cluster is no longer ACTIVE, or the key the poll was signed with is no longer
   * valid (EdgeCluster.signedWith): nothing was leased, and the poll should end.
   */
  revoked: boolean;
}

interface Prepared {
  row: Row;
  destinationId: string;
  /** The row's id: named as the holder of a probe slot it takes. */
  deliveryId: string;
  settings: DestinationSettings;
}

/**
 * Leases up to `max` due deliveries of the cluster to one agent poll (`leaseOwner`, from
 * newEdgeLeaseOwner, one per poll) and returns them ready to send, while the cluster and the
 * key that signed the poll are still valid (LEASE_SQL; else `revoked`). As the
 * deliverer does, some are not handed out:
 *
 * - those whose destination's circuit is open, or whose rate budget for this second is
 *   spent (the circuit breaker and rate limit the destination shares with the deliverer,
 *   asked for every destination of the batch in one Redis round trip): given back with no
 *   attempt and due again when the circuit may let a probe through, or in a later window
 *   (holdBack);
 * - a purged payload (`payload_missing`, to the DLQ), a destination with a secret that
 *   does not open (`signing_unavailable`: never sent unsigned or half-signed; retried, then
 *   the DLQ), and a URL that cannot be sent to (`connect`, as the deliverer records it):
 *   their attempt is recorded here. Nothing was sent: as leases given back unsent do, they
 *   return the rate token they took and, one that was its destination's half-open probe,
 *   the probe slot (giveBackToGate).
 *
 * Should anything fail after the lease statement, its leases are given back before the
 * error goes on (the caller answers 500 and would hand out nothing). `now` is the gate's
 * clock (tests pin it).
 */
export async function leaseWork(deps: EdgeDeps, cluster: EdgeCluster, input: { leaseOwner: string; max: number; now?: number }): Promise<Leased> {
  const { leaseOwner } = input;
  const answer = await deps.pool.query<Row | { [K in keyof Row]: null }>(LEASE_SQL, [cluster.id, cluster.tenantId, input.max, deps.config.EDGE_LEASE_MS, leaseOwner, cluster.signedWith]);
  if (answer.rows.length === 0) return { deliveries: [], heldBack: 0, revoked: true };
  const rows = answer.rows.filter((r): r is Row => r.id !== null);
  if (rows.length === 0) return { deliveries: [], heldBack: 0, revoked: false };
  try {
    const leased = rows.map((row) => ({ row, destinationId: row.destination_id, deliveryId: row.id, settings: destinationSettings(row.method, row.config, deps.policy.defaults) }));
    // As in the deliverer: header values an agent could not send (stored before the API
    // refused them) are left out of the work item (buildHeaders gets settings.headers), said once per destination.
    for (const l of leased) warnUnsendableHeaders(deps.logger, l.destinationId, l.settings);
    const { allowed, heldBack } = await holdBack(deps, leased, leaseOwner, input.now ?? Date.now());
    return { deliveries: await prepare(deps, allowed, leaseOwner, input.now), heldBack, revoked: false };
  } catch (err) {
    await releasePollLeases(deps, leaseOwner, rows.map((r) => r.id), input.now).catch(() => undefined);
    throw err;
  }
}

/**
 * The destinations' circuits and rate limits, as the deliverer's gate asks them: per
 * destination, an open circuit holds back everything until its cooldown ends, then lets
 * one probe through (half-open, counted in flight for the probe's lease); the rate limit
 * then grants what is left of the destination's one-second window, and the rest is spread
 * over the following windows. What is held back is given back unsent at once (no attempt,
 * attempt_count unchanged) and postponed to when it may go (postponePollLeases), so the
 * long-poll does not lease it again meanwhile. If Redis cannot answer, everything goes
 * (fail open, as in the deliverer): deliveries matter more than protection.
 */
async function holdBack(deps: EdgeDeps, leased: Prepared[], leaseOwner: string, now: number): Promise<{ allowed: Prepared[]; heldBack: number }> {
  let gated: Gated<Prepared>;
  try {
    gated = await gateAtOnce(deps.breaker, leased, (settings) => leaseMsFor(deps.config.EDGE_LEASE_MS, settings.timeoutMs), now, leaseOwner);
  } catch (err) {
    deps.logger.warn('destination gate unavailable, leasing without it', { destinations: new Set(leased.map((l) => l.destinationId)).size, error: (err as Error).message });
    return { allowed: leased, heldBack: 0 };
  }
  if (gated.deferred.length > 0) {
    await postponePollLeases(deps.pool, leaseOwner, gated.deferred.map((x) => ({ id: x.item.row.id, delayMs: x.delayMs })));
    deps.logger.debug('held back deliveries: circuit open or rate limit reached', { count: gated.deferred.length, destinations: new Set(gated.deferred.map((x) => x.item.destinationId)).size });
  }
  return { allowed: gated.allowed, heldBack: gated.deferred.length };
}

/** `gateNow`: the gate's pinned clock, if any (tests); else the window current when refused ones are given back. */
async function prepare(deps: EdgeDeps, leased: Prepared[], leaseOwner: string, gateNow?: number): Promise<WorkItem[]> {
  const items: WorkItem[] = [];
  const refused: Outcome[] = [];
  const refusedDestinations: string[] = [];
  const longer: { id: string; ms: number }[] = [];
  const now = new Date();
  for (const { row: r, settings, destinationId } of leased) {
    const secrets = openSecrets(deps.openSecret, r.secrets);
    if (!r.body || !secrets) {
      const result = notSent(!r.body ? 'payload_missing' : 'signing_unavailable', now);
      const attemptNumber = r.attempt_count + 1;
      refused.push({ deliveryId: r.id, tenantId: r.tenant_id, eventId: r.event_id, attemptNumber, result, decision: decide(settings, deps.policy.backoff, result, attemptNumber, { replayCount: r.replay_count, roundStartAttempt: r.round_start_attempt }) });
      refusedDestinations.push(destinationId);
      continue;
    }
    const ms = leaseMsFor(deps.config.EDGE_LEASE_MS, settings.timeoutMs);
    const stretched = ms > deps.config.EDGE_LEASE_MS;
    const until = stretched ? new Date(r.lease_until.getTime() + ms - deps.config.EDGE_LEASE_MS) : r.lease_until;
    let item: WorkItem;
    try {
      item = toItem({ ...r, body: r.body }, secrets, leaseOwner, until, settings);
    } catch (err) {
      // A URL the destinations API took but that cannot be sent to (credentials that do not
      // percent-decode): a failed attempt, nothing sent, as the deliverer records it
      // (http-sender.ts). Thrown, it would fail the whole poll, whose leases go back at once,
      // and every later poll would lease it first and fail the same: the cluster stuck.
      const result: SendResult = { statusCode: null, errorKind: 'connect', error: `invalid destination URL: ${(err as Error).message}`, responseBody: null, responseHeaders: null, startedAt: now, durationMs: 0 };
      const attemptNumber = r.attempt_count + 1;
      refused.push({ deliveryId: r.id, tenantId: r.tenant_id, eventId: r.event_id, attemptNumber, result, decision: decide(settings, deps.policy.backoff, result, attemptNumber, { replayCount: r.replay_count, roundStartAttempt: r.round_start_attempt }) });
      refusedDestinations.push(destinationId);
      continue;
    }
    if (stretched) longer.push({ id: r.id, ms });
    items.push(item);
  }
  if (longer.length > 0) {
    await deps.pool.query(
      `UPDATE deliveries d SET lease_until = d.lease_until + (u.ms - $3::float8) * interval '1 millisecond'
       FROM unnest($1::text[], $2::float8[]) AS u(id, ms) WHERE d.id = u.id AND d.lease_owner = $4`,
      [longer.map((l) => l.id), longer.map((l) => l.ms), deps.config.EDGE_LEASE_MS, leaseOwner],
    );
  }
  await recordOutcomes(deps.pool, leaseOwner, refused, { via: 'edge' });
  // As in the deliverer, the refused attempts that count against a destination (an invalid
  // URL's `connect`; not a purged payload or a secret that does not open) feed its circuit;
  // then, since none was sent, their rate tokens go back and a probe slot one of them holds
  // is freed if its circuit is still half-open. Neither call throws.
  await recordHealthAtOnce(deps, refused.map((o, i) => ({ destinationId: refusedDestinations[i]!, result: o.result })));
  await giveBackToGate(deps, refused.map((o, i) => ({ destinationId: refusedDestinations[i]!, deliveryId: o.deliveryId, leaseOwner })), gateNow);
  return items;
}
