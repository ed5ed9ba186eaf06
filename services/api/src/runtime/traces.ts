import { groupBy } from '@hookline/delivery';
import type { AppContext } from '../context';
import { eventWhere } from '../events/event.routes';
import { findPage, pageWhere, readPage } from '../http/pagination';
import { iso } from '../lib/format';

/** Deliveries one trace carries at most: the first by flow id (an event has one per flow). */
export const TRACE_MAX_DELIVERIES = 20;
/** Attempts one delivery of a trace carries at most: its latest, by attempt number. */
export const TRACE_MAX_ATTEMPTS = 10;

interface DeliveryRow {
  id: string;
  event_id: string;
  destination_id: string;
  attempt_count: number;
  created_at: Date;
}

interface AttemptRow {
  delivery_id: string;
  number: number;
  status_code: number | null;
  duration_ms: number;
  error_kind: string | null;
  started_at: Date;
}

// One more than the cap of each, to know whether something was left out. Each LATERAL
// subquery walks an index and stops at its LIMIT: deliveries (event_id, flow_id) (the
// unique key: hence flow-id order), attempts (delivery_id, number) backwards. PostgreSQL
// reads at most a page × (TRACE_MAX_DELIVERIES + 1) deliveries and as many × (TRACE_MAX_ATTEMPTS + 1) attempts.
const DELIVERIES_SQL = `
  SELECT d.id, d.event_id, d.destination_id, d.attempt_count, d.created_at
  FROM unnest($2::text[]) AS e(id)
  CROSS JOIN LATERAL (
    SELECT id, event_id, destination_id, attempt_count, created_at
    FROM deliveries
    WHERE event_id = e.id AND tenant_id = $1
    ORDER BY flow_id
    LIMIT $3
  ) d`;

const ATTEMPTS_SQL = `
  SELECT a.delivery_id, a.number, a.status_code, a.duration_ms, a.error_kind, a.started_at
  FROM unnest($2::text[]) AS x(id)
  CROSS JOIN LATERAL (
    SELECT delivery_id, number, status_code, duration_ms, error_kind, started_at
    FROM delivery_attempts
    WHERE delivery_id = x.id AND tenant_id = $1
    ORDER BY number DESC
    LIMIT $3
  ) a`;


/**
 * Traces: one per event (trace id = correlation id), its steps from receipt through its
 * deliveries' attempts, in time order. Three queries per page, whatever its size, each
 * bounded: a trace carries at most TRACE_MAX_DELIVERIES deliveries (the first by flow id)
 * and, of each, its latest TRACE_MAX_ATTEMPTS attempts. `deliveries_truncated` (with
 * `deliveries_url`, the paged list of all of them) and a delivery's `attempts_truncated`
 * (with `attempts_url`) say what was left out; `attempts_truncated` on the trace says some
 * delivery's were. Grouping is by Map, linear in what was read.
 */
export async function traces(app: AppContext, tenantId: string, query: Record<string, unknown>): Promise<Record<string, unknown>> {
  const page = readPage(query, 'evt');
  const where = eventWhere(tenantId, query);
  const result = await findPage(page, (a) => app.prisma.event.findMany({ ...a, where: pageWhere(where, a) }));
  const eventIds = result.items.map((e) => e.id);

  const deliveriesOf = eventIds.length
    ? groupBy((await app.pool.query<DeliveryRow>(DELIVERIES_SQL, [tenantId, eventIds, TRACE_MAX_DELIVERIES + 1])).rows, (d) => d.event_id)
    : new Map<string, DeliveryRow[]>();
  const cutDeliveries = new Set<string>();
  const shown: DeliveryRow[] = [];
  for (const [eventId, list] of deliveriesOf) {
    if (list.length > TRACE_MAX_DELIVERIES) {
      cutDeliveries.add(eventId);
      list.length = TRACE_MAX_DELIVERIES;
    }
    // In id order (creation), as the steps of one instant have always been.
    list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    shown.push(...list);
  }

  const attemptsOf = shown.length
    ? groupBy((await app.pool.query<AttemptRow>(ATTEMPTS_SQL, [tenantId, shown.map((d) => d.id), TRACE_MAX_ATTEMPTS + 1])).rows, (a) => a.delivery_id)
    : new Map<string, AttemptRow[]>();

  return {
    traces: result.items.map((e) => {
      const steps: { name: string; at: string; [k: string]: unknown }[] = [];
      const mark = (name: string, at: Date | null): void => {
        if (at) steps.push({ name, at: iso(at) });
      };
      mark('received', e.receivedAt);
      mark('validated', e.validatedAt);
      mark('filtered', e.filteredAt);
      let attemptsCut = false;
      for (const d of deliveriesOf.get(e.id) ?? []) {
        // Newest first from the query: the extra one (if any) is the oldest, dropped.
        const attempts = attemptsOf.get(d.id) ?? [];
        const cut = attempts.length > TRACE_MAX_ATTEMPTS;
        if (cut) attempts.length = TRACE_MAX_ATTEMPTS;
        attemptsCut ||= cut;
        steps.push({
          name: 'delivery.created',
          at: iso(d.created_at),
          delivery_id: d.id,
          destination_id: d.destination_id,
          attempt_count: d.attempt_count,
          attempts_truncated: cut,
          ...(cut ? { attempts_url: `/v1/delivery-attempts?delivery_id=${encodeURIComponent(d.id)}` } : {}),
        });
        for (let i = attempts.length - 1; i >= 0; i--) {
          const a = attempts[i]!;
          steps.push({ name: 'delivery.attempt', at: iso(a.started_at), delivery_id: d.id, number: a.number, status_code: a.status_code, duration_ms: a.duration_ms, error_kind: a.error_kind });
        }
      }
      mark('delivered', e.deliveredAt);
      mark('failed', e.failedAt);
      steps.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
      const deliveriesCut = cutDeliveries.has(e.id);
      return {
        trace_id: e.correlationId,
        event_id: e.id,
        ingester_id: e.ingesterId,
        status: e.status,
        deliveries_truncated: deliveriesCut,
        attempts_truncated: attemptsCut,
        ...(deliveriesCut ? { deliveries_url: `/v1/deliveries?event_id=${encodeURIComponent(e.id)}` } : {}),
        steps,
      };
    }),
    next_cursor: result.next_cursor,
    ...(result.next_offset !== undefined ? { next_offset: result.next_offset } : {}),
  };
}
