import { AppError } from '@hookline/errors';
import type { AppContext } from '../context';
import { attemptToView } from '../deliveries/delivery.view';
import { idRangeWhere } from '../http/id-window';
import { findPage, readPage, readTimeRange, stringParam } from '../http/pagination';
import { listBody } from '../http/schemas';

/** Every delivery attempt of the tenant, newest first; status = succeeded | failed. */
export async function listTenantAttempts(app: AppContext, tenantId: string, query: Record<string, unknown>): Promise<Record<string, unknown>> {
  const page = readPage(query, 'att');
  const status = stringParam(query, 'status');
  if (status !== undefined && status !== 'succeeded' && status !== 'failed') throw AppError.validation([{ field: 'status', message: 'must be one of: succeeded, failed' }]);
  const deliveryId = stringParam(query, 'delivery_id');
  const eventId = stringParam(query, 'event_id');
  const destinationId = stringParam(query, 'destination_id');
  const range = readTimeRange(query);
  const ok = { statusCode: { gte: 200, lt: 300 } };
  const where = {
    tenantId,
    ...(deliveryId ? { deliveryId } : {}),
    ...(eventId || destinationId ? { delivery: { ...(eventId ? { eventId } : {}), ...(destinationId ? { destinationId } : {}) } } : {}),
    // started_at has no index: the id bounds (id-window.ts) let (tenant_id, id) read the window.
    ...(range ? { startedAt: range, AND: idRangeWhere('att', range) } : {}),
    ...(status === 'succeeded' ? ok : status === 'failed' ? { OR: [{ statusCode: null }, { statusCode: { lt: 200 } }, { statusCode: { gte: 300 } }] } : {}),
  };
  const result = await findPage(page, (a) => app.prisma.deliveryAttempt.findMany({ ...a, where: { ...where, ...a.where } }));
  return listBody('delivery_attempts', result, attemptToView);
}
