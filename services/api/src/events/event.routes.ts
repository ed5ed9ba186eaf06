import { AppError } from '@hookline/errors';
import { shownStatus } from '@hookline/delivery';
import type { Prisma } from '@hookline/db';
import type { AppContext } from '../context';
import { idRangeWhere } from '../http/id-window';
import { findPage, pageWhere, readPage, readTimeRange, stringParam } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { ok } from '../lib/format';
import { EVENT_STATUSES, eventToView, eventView } from './event.view';

const TAG = 'Events';

/**
 * Filters of the event lists (events, traces); `event_id` sets `id`, so page with `pageWhere`.
 * `since`/`until` filter received_at, which no index covers: they also bound the id
 * (id-window.ts), so that events_tenant_id_id_idx reads the window, not the whole history.
 */
export function eventWhere(tenantId: string, query: Record<string, unknown>): Prisma.EventWhereInput {
  const status = stringParam(query, 'status');
  if (status !== undefined && !(EVENT_STATUSES as readonly string[]).includes(status)) throw AppError.validation([{ field: 'status', message: `must be one of: ${EVENT_STATUSES.join(', ')}` }]);
  const source = stringParam(query, 'source_id');
  const correlation = stringParam(query, 'correlation_id');
  const eventId = stringParam(query, 'event_id');
  const range = readTimeRange(query);
  return {
    tenantId,
    ...(status ? { status: status as (typeof EVENT_STATUSES)[number] } : {}),
    ...(source ? { ingesterId: source } : {}),
    ...(correlation ? { correlationId: correlation } : {}),
    ...(eventId ? { id: eventId } : {}),
    ...(range ? { receivedAt: range, AND: idRangeWhere('evt', range) } : {}),
  };
}

/** One event with its timeline, its deliveries and whether its payload is retained. */
export async function getEvent(app: AppContext, tenantId: string, id: string): Promise<Record<string, unknown>> {
  const row = await app.prisma.event.findFirst({ where: { id, tenantId } });
  if (!row) throw AppError.notFound('event');
  const [deliveries, payload] = await Promise.all([
    app.prisma.delivery.findMany({ where: { eventId: id, tenantId }, orderBy: { id: 'asc' }, select: { id: true, destinationId: true, status: true, leaseUntil: true, attemptCount: true } }),
    app.prisma.eventPayload.count({ where: { eventId: id } }),
  ]);
  return eventToView(row, {
    payload_retained: payload > 0,
    deliveries: deliveries.map((d) => ({ id: d.id, destination_id: d.destinationId, status: shownStatus(d.status, d.leaseUntil), attempt_count: d.attemptCount })),
  });
}

const read = { auth: 'credential', tenant: 'path', scope: 'read:events' } as const;

export const eventRoutes: AuthedRoute[] = [
  {
    ...read,
    method: 'get',
    path: '/v1/tenants/:tid/events',
    operationId: 'events.list',
    doc: { summary: 'List events (newest first)', tag: TAG, response: listOf('events', eventView), query: ['limit', 'cursor', 'offset', 'status', 'event_id', 'source_id', 'correlation_id', 'since', 'until'] },
    handler: async (ctx) => {
      const page = readPage(ctx.query, 'evt');
      const where = eventWhere(ctx.tenantId, ctx.query);
      const result = await findPage(page, (a) => ctx.app.prisma.event.findMany({ ...a, where: pageWhere(where, a) }));
      return ok(listBody('events', result, (r) => eventToView(r)));
    },
  },
  {
    ...read,
    method: 'get',
    path: '/v1/tenants/:tid/events/:eid',
    operationId: 'events.get',
    doc: { summary: 'Get an event with its status timeline and deliveries', tag: TAG, response: eventView, errors: [404] },
    handler: async (ctx) => ok(await getEvent(ctx.app, ctx.tenantId, ctx.params['eid']!)),
  },
];
