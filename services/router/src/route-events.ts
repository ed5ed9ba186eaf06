import { hotStatement, newId, type Pool } from '@hookline/db';
import { Budget, buildFilterDocument, LIMITS, type CompiledFilter, type FilterDocument } from '@hookline/filters';
import type { Logger } from '@hookline/logger';
import type { Metrics } from '@hookline/observability';
import { deliverQueueName, type Producer } from '@hookline/queues';
import type { ActiveFlow, FlowCache } from './flow-cache';
import { loadPayloadChunks, loadValidatedEvents, type EventPayload, type RoutableEvent } from './load-events';
import { FILTER_REASONS, type FilterReason } from './reasons';

export interface RouteDeps {
  pool: Pool;
  producer: Pick<Producer, 'add'>;
  flows: FlowCache;
  logger: Logger;
  /** DEDICATED_POOLS: tenant id → deliverer pool; other tenants use the default `deliver` queue. */
  pools?: ReadonlyMap<string, string>;
  metrics?: Pick<Metrics, 'redisErrors'>;
  /** Bytes of stored requests read per query at most (default PAYLOAD_CHUNK_BYTES, 16 MiB). */
  payloadChunkBytes?: number;
}

/**
 * Steps that all the filters run on one event (the ingester's and every flow's) may spend
 * together; each filter still has its own LIMITS.maxSteps. An event that spends it fails
 * closed, as a filter over its own budget does: no filter of it matches (flows without a
 * filter still get it), so it is `ingester_filter_rejected` when the ingester's filter spent
 * it, else `filter_rejected` unless such a flow took it. It bounds what one (hostile) body
 * costs however many flows look at it.
 */
export const EVENT_STEP_BUDGET = 2 * LIMITS.maxSteps;
/** Filter evaluation gives the event loop a turn after this long... */
const YIELD_AFTER_MS = 5;
/** ...or this many events, whichever comes first (health checks, BullMQ lock renewals, pub/sub). */
const YIELD_EVERY_EVENTS = 32;

export interface RouteInput {
  eventIds: readonly string[];
  /** Carried on to the deliver job(s). */
  traceparent?: string;
}

export interface RouteOutcome {
  /** Events found in `validated` and moved to `filtered` by this call. */
  routed: number;
  /** Ids given that were not in `validated` (already routed, or unknown). */
  skipped: number;
  /** Routed events that matched no flow. */
  unmatched: number;
  /** Deliveries this call created (a repeated job creates none). */
  deliveryIds: string[];
  /**
   * Of deliveryIds, those held: their destination is DISABLED, so no deliver job is
   * enqueued for them; they wait, pending, until it is enabled (or deleted).
   */
  held: number;
  /** False when a deliver job could not be enqueued (the deliverer's recovery sweep will send them). */
  enqueued: boolean;
  /** The queue of each deliver job enqueued (`deliver`, `deliver.<pool>`). */
  queues: string[];
}

interface NewDelivery {
  id: string;
  tenantId: string;
  eventId: string;
  flowId: string;
  destinationId: string;
  /** The destination was DISABLED when the flows were loaded. */
  held: boolean;
}

// Both route statements' head: the batch's events still `validated`, each locked (FOR
// UPDATE) in id order, so two routers lock them in the same order, and looked up by primary
// key, one id at a time (LATERAL; LIMIT 1 keeps the status test out of the lookup, else a
// plan cached on a near-empty table walks the partial index of every `validated` event, a
// backlog's worth, per id). The status is tested on the locked row. A router whose flow
// cache differs from another's (a config change not yet announced to both) may route the
// same event at the same time: the one that comes second waits for the first one's lock,
// then sees the event `filtered` and leaves it out, deliveries included. Without the lock
// it inserted its deliveries anyway, and the event kept the first one's reason
// (`no_matching_flow`).
const ROUTABLE = `routable AS (
    SELECT l.id FROM (SELECT DISTINCT unnest($6::text[]) AS id ORDER BY 1) x
    CROSS JOIN LATERAL (SELECT e.id, e.status FROM events e WHERE e.id = x.id LIMIT 1 FOR UPDATE) l
    WHERE l.status = 'validated'
  )`;

// Both route statements' tail: the events' move to `filtered` (with the reason of those
// that made no delivery) and the counts, after the deliveries' CTE `created`. Only the
// events locked in `routable` (`validated` when locked, which they stay until this commits).
const MARKED_AND_RESULT = `), marked AS (
    UPDATE events e SET status = 'filtered', filtered_at = now(), updated_at = now(), status_reason = u.reason
    FROM routable r JOIN unnest($6::text[], $7::text[]) AS u(id, reason) ON u.id = r.id
    WHERE e.id = r.id
    RETURNING e.id
  )
  SELECT (SELECT count(*) FROM marked)::int AS routed, COALESCE((SELECT array_agg(id) FROM created), '{}') AS delivery_ids`;

// One statement, so one round trip and atomic without BEGIN/COMMIT: the deliveries (the
// (event, flow) key stops a second one when a job repeats) of the events still `validated`
// (`routable`), and their move from `validated` to `filtered`. With no delivery to make,
// the INSERT gets empty arrays.
export const ROUTE = `WITH ${ROUTABLE}, created AS (
    INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, next_attempt_at, created_at, updated_at)
    SELECT u.id, u.tenant_id, u.event_id, u.flow_id, u.destination_id, 'pending', now(), now(), now()
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(id, tenant_id, event_id, flow_id, destination_id)
    WHERE u.event_id IN (SELECT id FROM routable)
    ON CONFLICT (event_id, flow_id) DO NOTHING
    RETURNING id
  ${MARKED_AND_RESULT}`;

// ROUTE for a batch with deliveries to DISABLED destinations ($8: those destinations). Their
// rows are locked FOR SHARE first (in id order) and read as they are now, not as the flow
// cache saw them: a destination deleted meanwhile gets no delivery (the delete, which
// exhausts the destination's open deliveries in its transaction, either committed before
// this lock, or waits for this statement and then sees its deliveries), and one enabled
// meanwhile is named in active_ids, so that its deliveries are enqueued (the enable's own
// re-enqueue runs after it committed, so it finds them otherwise). A delivery whose
// destination is DISABLED at this lock is stored `held` (the recovery sweep's index leaves
// it out; the enable clears it in its transaction, which waits for this lock), with
// held_since now (the deliverer's janitor moves it to the DLQ once it has been held for
// HELD_RETENTION_MS, migration 20261125000000_held_expiry). Only batches with held
// deliveries pay for the lock; ROUTE stays as it is. routed_ids: the events this statement
// moved (MARK_UNMATCHED touches no other).
export const ROUTE_HELD = `WITH ${ROUTABLE}, held AS (
    SELECT t.id, t.state FROM destinations t WHERE t.id = ANY($8::text[]) ORDER BY t.id FOR SHARE
  ), created AS (
    INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, next_attempt_at, created_at, updated_at, held, held_since)
    SELECT u.id, u.tenant_id, u.event_id, u.flow_id, u.destination_id, 'pending', now(), now(), now(), x.held, CASE WHEN x.held THEN now() END
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(id, tenant_id, event_id, flow_id, destination_id)
    CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM held h WHERE h.id = u.destination_id AND h.state = 'DISABLED') AS held) x
    WHERE u.event_id IN (SELECT id FROM routable)
      AND NOT EXISTS (SELECT 1 FROM held h WHERE h.id = u.destination_id AND h.state NOT IN ('ACTIVE', 'DISABLED'))
    ON CONFLICT (event_id, flow_id) DO NOTHING
    RETURNING id
  ${MARKED_AND_RESULT},
    COALESCE((SELECT array_agg(id) FROM held WHERE state = 'ACTIVE'), '{}') AS active_ids,
    COALESCE((SELECT array_agg(id) FROM held WHERE state NOT IN ('ACTIVE', 'DISABLED')), '{}') AS gone_ids,
    COALESCE((SELECT array_agg(id) FROM marked), '{}') AS routed_ids`;

// Events whose only deliveries went to a destination deleted while they were routed: as
// if it had not matched (an event that produced deliveries has no reason). $1: only events
// the route statement itself moved to `filtered` (one another router routed is its own).
const MARK_UNMATCHED = `UPDATE events e SET status_reason = $2, updated_at = now()
  WHERE e.id = ANY($1::text[]) AND e.status = 'filtered' AND e.status_reason IS NULL
    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)`;

/**
 * Routes a batch of events: runs the ingester's own filter, if any (an event it rejects goes
 * to none of the ingester's flows: `ingester_filter_rejected`), then each active flow's
 * filter, inserts one delivery per matching flow and marks the events `filtered`, in one
 * statement, then enqueues
 * the new deliveries as one `deliver` job. Safe to repeat: routed events are skipped and
 * the (event, flow) key stops a second delivery. A flow to a DISABLED destination routes
 * too: its deliveries are created pending and held (no job) until the destination is
 * enabled (the api's enable, or the deliverer's recovery sweep, enqueues them) or deleted
 * (they go to the DLQ).
 *
 * Stored requests are read only for events that a filter still has to test once the event
 * types were checked, and only if that filter reads headers, query or body; they are read
 * and evaluated in chunks of at most `payloadChunkBytes`, one chunk held at a time. The
 * evaluation gives the event loop a turn every few milliseconds, and each event's filters
 * share one budget (EVENT_STEP_BUDGET).
 */
export async function routeEvents(deps: RouteDeps, input: RouteInput): Promise<RouteOutcome> {
  const ids = [...new Set(input.eventIds)];
  const events = await loadValidatedEvents(deps.pool, ids);
  const outcome: RouteOutcome = { routed: 0, skipped: ids.length - events.length, unmatched: 0, deliveryIds: [], held: 0, enqueued: true, queues: [] };
  if (events.length === 0) return outcome;

  const flowsByIngester = await deps.flows.lookup(new Map(events.map((e) => [e.ingester_id, e.tenant_id])));
  const deliveries: NewDelivery[] = [];
  const reasons: Array<FilterReason | null> = events.map(() => null);
  const overBudget: string[] = [];
  const pacer = new Pacer();
  // The ingester's own filter gates all of its flows; it runs only when there are flows to gate.
  const routing = events.map((event): { flows: ActiveFlow[]; gate: CompiledFilter | null } => {
    const entry = flowsByIngester.get(event.ingester_id);
    const flows = (entry?.flows ?? []).filter((f) => f.tenantId === event.tenant_id);
    return { flows, gate: flows.length > 0 ? (entry?.ingesterFilter ?? null) : null };
  });
  const settle = async (i: number, payload: EventPayload | undefined): Promise<void> => {
    const event = events[i]!;
    const { flows, gate } = routing[i]!;
    const { matched, gated, spent } = matchingFlows(event, payload, gate, flows);
    if (spent) overBudget.push(event.id);
    for (const f of matched) deliveries.push({ id: newId('dlv'), tenantId: event.tenant_id, eventId: event.id, flowId: f.id, destinationId: f.destinationId, held: !f.destinationActive });
    reasons[i] =
      matched.length > 0
        ? null
        : flows.length === 0
          ? reasonWithoutFlows(event, flowsByIngester.get(event.ingester_id)?.switchedOffTenant)
          : gated
            ? FILTER_REASONS.ingesterFilterRejected
            : FILTER_REASONS.filterRejected;
    if (pacer.due()) await pacer.yield();
  };

  // Events that no filter needs the stored request of are decided now; the others (by id)
  // once their request is read.
  const needPayload = new Map<string, number>();
  for (const [i, event] of events.entries()) {
    const { flows, gate } = routing[i]!;
    if (readsPayload(event, gate, flows)) needPayload.set(event.id, i);
    else await settle(i, undefined);
  }
  for await (const chunk of loadPayloadChunks(deps.pool, [...needPayload.keys()], deps.payloadChunkBytes)) {
    pacer.rested();
    for (const [id, payload] of chunk) {
      // Released as soon as it was looked at: the chunk's other requests are all that is held.
      chunk.delete(id);
      const i = needPayload.get(id);
      if (i === undefined) continue;
      needPayload.delete(id);
      await settle(i, payload);
    }
  }
  // Events without a stored request (retention purged it): filtered on what they have.
  for (const i of needPayload.values()) await settle(i, undefined);
  outcome.unmatched = reasons.filter((r) => r !== null).length;
  if (overBudget.length > 0) {
    deps.logger.warn('events whose filters spent their shared evaluation budget matched no filter (fail closed)', {
      events: overBudget.length,
      event_ids: overBudget.slice(0, 20),
      budget_steps: EVENT_STEP_BUDGET,
    });
  }

  const heldDestinations = [...new Set(deliveries.filter((d) => d.held).map((d) => d.destinationId))];
  const cols = (k: 'id' | 'tenantId' | 'eventId' | 'flowId' | 'destinationId'): string[] => deliveries.map((d) => d[k]);
  const params = [cols('id'), cols('tenantId'), cols('eventId'), cols('flowId'), cols('destinationId'), events.map((e) => e.id), reasons];
  const { rows } = await deps.pool.query<{ routed: number; delivery_ids: string[]; active_ids?: string[]; gone_ids?: string[]; routed_ids?: string[] }>(
    heldDestinations.length === 0 ? hotStatement('router_route', ROUTE, params) : hotStatement('router_route_held', ROUTE_HELD, [...params, heldDestinations]),
  );
  outcome.routed = rows[0]!.routed;
  outcome.deliveryIds = rows[0]!.delivery_ids;
  const created = new Set(outcome.deliveryIds);
  const nowActive = new Set(rows[0]!.active_ids ?? []);
  const gone = new Set(rows[0]!.gone_ids ?? []);
  if (gone.size > 0) {
    const movedHere = new Set(rows[0]!.routed_ids ?? []);
    const lost = [...new Set(deliveries.filter((d) => gone.has(d.destinationId) && movedHere.has(d.eventId)).map((d) => d.eventId))];
    if (lost.length > 0) await deps.pool.query(MARK_UNMATCHED, [lost, FILTER_REASONS.noMatchingFlow]);
  }

  // One deliver job per pool: a dedicated tenant's deliveries go to its pool's queue. Held
  // deliveries get none (a job would find nothing to claim), unless their destination
  // turned out to be ACTIVE again.
  const byPool = new Map<string | null, string[]>();
  for (const d of deliveries) {
    if (!created.has(d.id)) continue;
    if (d.held && !nowActive.has(d.destinationId)) {
      outcome.held++;
      continue;
    }
    const pool = deps.pools?.get(d.tenantId) ?? null;
    const ids = byPool.get(pool);
    if (ids) ids.push(d.id);
    else byPool.set(pool, [d.id]);
  }
  for (const [pool, deliveryIds] of byPool) {
    const job = { v: 1 as const, deliveryIds, ...(input.traceparent ? { traceparent: input.traceparent } : {}) };
    try {
      await deps.producer.add('deliver', job, { pool });
      outcome.queues.push(deliverQueueName(pool));
    } catch (err) {
      // The deliveries are committed as `pending`; the deliverer's recovery sweep sends them.
      outcome.enqueued = false;
      deps.metrics?.redisErrors.inc({ operation: 'enqueue' });
      deps.logger.error('could not enqueue deliver job; recovery will pick the deliveries up', { deliveries: deliveryIds.length, queue: deliverQueueName(pool), err: (err as Error).message });
    }
  }
  return outcome;
}

/** Why an event whose ingester has no flow that routes was routed nowhere. */
function reasonWithoutFlows(event: RoutableEvent, switchedOffTenant: string | null | undefined): FilterReason {
  return switchedOffTenant === event.tenant_id ? FILTER_REASONS.flowNotActive : FILTER_REASONS.noMatchingFlow;
}

/**
 * Whether a filter still to run on the event reads its stored request: the ingester's (unless
 * its event types reject the event), or a flow's whose event types accept it.
 */
function readsPayload(event: RoutableEvent, gate: CompiledFilter | null, flows: ActiveFlow[]): boolean {
  if (gate && !gate.acceptsType(event.type)) return false;
  return (gate?.readsPayload ?? false) || flows.some((f) => !f.matchAll && f.filter.readsPayload && f.filter.acceptsType(event.type));
}

/**
 * The flows whose filter accepts the event, once the ingester's own filter (`gate`, null:
 * none) has accepted it; `gated` when that one rejected it (then no flow is tried). Event
 * types are tested first, without a document; the document (the body parsed) is built only
 * if a filter is left to run, once for all of them. All the filters share one budget of
 * EVENT_STEP_BUDGET steps: once it is spent (`spent`), no filter matches (fail closed), as a
 * filter over its own budget does not; flows without a filter still match.
 */
function matchingFlows(
  event: RoutableEvent,
  payload: EventPayload | undefined,
  gate: CompiledFilter | null,
  flows: ActiveFlow[],
): { matched: ActiveFlow[]; gated: boolean; spent: boolean } {
  if (gate && !gate.acceptsType(event.type)) return { matched: [], gated: true, spent: false };
  const candidates = flows.filter((f) => !f.matchAll && f.filter.acceptsType(event.type));
  let doc: FilterDocument | undefined;
  const docOf = (): FilterDocument =>
    (doc ??= buildFilterDocument({
      type: event.type,
      ingesterId: event.ingester_id,
      provider: event.provider,
      headers: payload?.headers,
      query: payload?.query ?? null,
      contentType: payload?.content_type ?? null,
      body: payload?.body ?? null,
    }));
  const budget = new Budget(EVENT_STEP_BUDGET);
  const spent = (): boolean => budget.used > budget.maxSteps;
  if (gate && !gate.matches(docOf(), budget)) return { matched: [], gated: true, spent: spent() };
  const passed = new Set<ActiveFlow>();
  for (const f of candidates) {
    if (spent()) break;
    if (f.filter.matches(docOf(), budget)) passed.add(f);
  }
  if (spent()) return { matched: flows.filter((f) => f.matchAll), gated: false, spent: true };
  return { matched: flows.filter((f) => f.matchAll || passed.has(f)), gated: false, spent: false };
}

/**
 * When a batch's filter evaluation gives the event loop a turn: after YIELD_AFTER_MS or
 * YIELD_EVERY_EVENTS events since the last one, so that a batch of large bodies never holds
 * the loop (health checks, BullMQ lock renewals, config-change messages) for long.
 */
class Pacer {
  private since = performance.now();
  private events = 0;

  due(): boolean {
    return ++this.events >= YIELD_EVERY_EVENTS || performance.now() - this.since >= YIELD_AFTER_MS;
  }

  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.rested();
  }

  /** The loop had a turn (an awaited query). */
  rested(): void {
    this.since = performance.now();
    this.events = 0;
  }
}
