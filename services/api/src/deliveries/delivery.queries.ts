import { AppError, type FieldError } from '@hookline/errors';
import type { Prisma } from '@hookline/db';
import { CLAIMABLE_STATUSES } from '@hookline/delivery';
import type { AppContext } from '../context';
import { idRangeWhere } from '../http/id-window';
import { findPage, readPage, readTimeRange, stringParam, type PageResult } from '../http/pagination';
import type { Delivery, DeliveryAttempt } from '../lib/models';
import { DELIVERY_STATUSES, type DeliveryStatus } from './delivery.view';

/**
 * The status filter as stored rows: `delivering` is a claimable status under a live lease
 * (see @hookline/delivery lease.ts), and a claimable status matches only rows not held.
 */
export function statusWhere(status: DeliveryStatus, now = new Date()): Prisma.DeliveryWhereInput {
  if (status === 'delivering') return { status: { in: [...CLAIMABLE_STATUSES] }, leaseUntil: { gt: now } };
  if ((CLAIMABLE_STATUSES as readonly string[]).includes(status)) return { status, AND: [{ OR: [{ leaseUntil: null }, { leaseUntil: { lte: now } }] }] };
  return { status };
}

/**
 * Filters of the delivery lists: status, event_id, destination_id, source_id, since, until.
 * `since`/`until` filter created_at, which no index covers: they also bound the id
 * (id-window.ts), so that deliveries_tenant_id_id_idx (or the status one) reads the window.
 */
export function deliveryWhere(tenantId: string, query: Record<string, unknown>, forceStatus?: DeliveryStatus): Prisma.DeliveryWhereInput {
  const errors: FieldError[] = [];
  const status = forceStatus ?? stringParam(query, 'status');
  if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status)) errors.push({ field: 'status', message: `must be one of: ${DELIVERY_STATUSES.join(', ')}` });
  if (errors.length) throw AppError.validation(errors);
  const eventId = stringParam(query, 'event_id');
  const destinationId = stringParam(query, 'destination_id');
  const sourceId = stringParam(query, 'source_id');
  const range = readTimeRange(query);
  const byStatus = status ? statusWhere(status as DeliveryStatus) : {};
  // statusWhere's own AND (the lease test) and the id bounds, both kept.
  const and = [...(byStatus.AND === undefined ? [] : Array.isArray(byStatus.AND) ? byStatus.AND : [byStatus.AND]), ...idRangeWhere('dlv', range)];
  return {
    tenantId,
    ...byStatus,
    ...(eventId ? { eventId } : {}),
    ...(destinationId ? { destinationId } : {}),
    ...(sourceId ? { event: { ingesterId: sourceId } } : {}),
    ...(range ? { createdAt: range } : {}),
    ...(and.length ? { AND: and } : {}),
  };
}

export async function listDeliveries(app: AppContext, tenantId: string, query: Record<string, unknown>, forceStatus?: DeliveryStatus): Promise<PageResult<Delivery>> {
  const page = readPage(query, 'dlv');
  const where = deliveryWhere(tenantId, query, forceStatus);
  return findPage(page, (a) => app.prisma.delivery.findMany({ ...a, where: { ...where, ...a.where } }));
}

export async function findDelivery(app: AppContext, tenantId: string, id: string): Promise<Delivery> {
  const row = await app.prisma.delivery.findFirst({ where: { id, tenantId } });
  if (!row) throw AppError.notFound('delivery');
  return row;
}

/** Attempt history of one delivery, newest first. */
export async function listAttempts(app: AppContext, tenantId: string, deliveryId: string, query: Record<string, unknown>): Promise<PageResult<DeliveryAttempt>> {
  await findDelivery(app, tenantId, deliveryId);
  const page = readPage(query, 'att');
  return findPage(page, (a) => app.prisma.deliveryAttempt.findMany({ ...a, where: { tenantId, deliveryId, ...a.where } }));
}
