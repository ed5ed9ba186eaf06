import type { AppContext } from '../context';
import { eventWhere } from '../events/event.routes';
import { findPage, pageWhere, readPage } from '../http/pagination';
import { iso } from '../lib/format';

/**
 * Traces: one per event (trace id = correlation id), its steps from receipt through every
 * delivery attempt, in time order. Three queries per page, whatever its size.
 */
export async function traces(app: AppContext, tenantId: string, query: Record<string, unknown>): Promise<Record<string, unknown>> {
  const page = readPage(query);
  const where = eventWhere(tenantId, query);
  const result = await findPage(page, (a) => app.prisma.event.findMany({ ...a, where: pageWhere(where, a) }));
  const eventIds = result.items.map((e) => e.id);
  const deliveries = eventIds.length ? await app.prisma.delivery.findMany({ where: { tenantId, eventId: { in: eventIds } }, orderBy: { id: 'asc' } }) : [];
  const attempts = deliveries.length
    ? await app.prisma.deliveryAttempt.findMany({ where: { tenantId, deliveryId: { in: deliveries.map((d) => d.id) } }, orderBy: [{ deliveryId: 'asc' }, { number: 'asc' }] })
    : [];
  return {
    traces: result.items.map((e) => {
      const steps: { name: string; at: string; [k: string]: unknown }[] = [];
      const mark = (name: string, at: Date | null): void => {
        if (at) steps.push({ name, at: iso(at) });
      };
      mark('received', e.receivedAt);
      mark('validated', e.validatedAt);
      mark('filtered', e.filteredAt);
      for (const d of deliveries.filter((x) => x.eventId === e.id)) {
        steps.push({ name: 'delivery.created', at: iso(d.createdAt), delivery_id: d.id, destination_id: d.destinationId });
        for (const a of attempts.filter((x) => x.deliveryId === d.id)) {
          steps.push({ name: 'delivery.attempt', at: iso(a.startedAt), delivery_id: d.id, number: a.number, status_code: a.statusCode, duration_ms: a.durationMs, error_kind: a.errorKind });
        }
      }
      mark('delivered', e.deliveredAt);
      mark('failed', e.failedAt);
      steps.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
      return { trace_id: e.correlationId, event_id: e.id, ingester_id: e.ingesterId, status: e.status, steps };
    }),
    next_cursor: result.next_cursor,
    ...(result.next_offset !== undefined ? { next_offset: result.next_offset } : {}),
  };
}
