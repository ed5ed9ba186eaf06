import { AppError, type FieldError } from '@hookline/errors';
import { newId } from '@hookline/db';
import { validateFilter } from '@hookline/filters';
import type { AppContext } from '../context';
import { asObject, iso } from '../lib/format';
import { announce, duplicateName, lockNames, unresolved, type Tx } from '../lib/config-writes';
import type { DeliveryFlow } from '../lib/models';
import type { FlowBody } from './flow.schema';

export function flowToView(row: DeliveryFlow): Record<string, unknown> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    // SPEC's names of the two references, as a flow is created with them, and the id-style names.
    endpoint: row.ingesterId,
    target: row.destinationId,
    ingester_id: row.ingesterId,
    destination_id: row.destinationId,
    filter: asObject(row.filter),
    state: row.state,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

/** `endpoint`/`ingester_id` and `target`/`destination_id` are two spellings of one reference. */
function references(body: FlowBody): { ingesterId: string; destinationId: string; filter: Record<string, unknown> } {
  const errors: FieldError[] = [];
  const pick = (a: string | undefined, b: string | undefined, names: [string, string]): string => {
    if (a && b && a !== b) errors.push({ field: names[1], message: `must equal ${names[0]} when both are given` });
    if (!a && !b) errors.push({ field: names[0], message: 'is required' });
    return (a ?? b)!;
  };
  const ingesterId = pick(body.endpoint, body.ingester_id, ['endpoint', 'ingester_id']);
  const destinationId = pick(body.target, body.destination_id, ['target', 'destination_id']);
  const filter = body.filter ?? {};
  errors.push(...validateFilter(filter, 'filter'));
  if (errors.length) throw AppError.validation(errors);
  return { ingesterId, destinationId, filter };
}

/** Both ends must exist in the tenant (a deleted one counts as gone) → else 422. */
async function assertReferences(tx: Tx, tenantId: string, ingesterId: string, destinationId: string): Promise<void> {
  const [ing, dst] = await Promise.all([
    tx.ingester.count({ where: { id: ingesterId, tenantId, state: { not: 'DELETED' } } }),
    tx.destination.count({ where: { id: destinationId, tenantId, state: { not: 'DELETED' } } }),
  ]);
  const errors: FieldError[] = [];
  if (!ing) errors.push({ field: 'endpoint', message: `ingester ${ingesterId} does not exist` });
  if (!dst) errors.push({ field: 'target', message: `destination ${destinationId} does not exist` });
  if (errors.length) throw unresolved(errors);
}

/**
 * An ingester's flows are its fan-out: each of its events makes one delivery per flow, in one
 * router insert and one deliver job that every tenant's events share. Past
 * FLOWS_PER_INGESTER_MAX flows (not DELETED; `exceptFlow`, the one being moved, not counted),
 * 409. The caller holds the tenant's flow name lock (lockNames), so two writes cannot both pass.
 */
async function assertFanOut(tx: Tx, app: AppContext, tenantId: string, ingesterId: string, exceptFlow?: string): Promise<void> {
  const max = app.config.FLOWS_PER_INGESTER_MAX;
  const count = await tx.deliveryFlow.count({ where: { tenantId, ingesterId, state: { not: 'DELETED' }, ...(exceptFlow ? { id: { not: exceptFlow } } : {}) } });
  if (count >= max) {
    throw new AppError('conflict', `Ingester ${ingesterId} already has ${count} delivery flows, the most one ingester may have (FLOWS_PER_INGESTER_MAX ${max}); delete one first.`, {
      reason_code: 'flow_limit_reached',
      limit: max,
      ingester_id: ingesterId,
    });
  }
}

export async function createFlow(app: AppContext, tenantId: string, body: FlowBody): Promise<DeliveryFlow> {
  const refs = references(body);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'flow', tenantId);
    await assertReferences(tx, tenantId, refs.ingesterId, refs.destinationId);
    if (await tx.deliveryFlow.count({ where: { tenantId, name: body.name, state: { not: 'DELETED' } } })) throw duplicateName('flow', body.name);
    await assertFanOut(tx, app, tenantId, refs.ingesterId);
    return tx.deliveryFlow.create({
      data: { id: newId('flw'), tenantId, name: body.name, ingesterId: refs.ingesterId, destinationId: refs.destinationId, filter: refs.filter as object, state: body.state ?? 'ACTIVE' },
    });
  });
  await announce(app, { kind: 'flow', id: row.id, tenantId });
  return row;
}

export async function findFlow(app: AppContext, tenantId: string, id: string): Promise<DeliveryFlow> {
  const row = await app.prisma.deliveryFlow.findFirst({ where: { id, tenantId, state: { not: 'DELETED' } } });
  if (!row) throw AppError.notFound('flow');
  return row;
}

export async function updateFlow(app: AppContext, tenantId: string, id: string, body: FlowBody): Promise<DeliveryFlow> {
  const refs = references(body);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'flow', tenantId);
    const current = await tx.deliveryFlow.findFirst({ where: { id, tenantId, state: { not: 'DELETED' } }, select: { ingesterId: true } });
    if (!current) throw AppError.notFound('flow');
    await assertReferences(tx, tenantId, refs.ingesterId, refs.destinationId);
    if (await tx.deliveryFlow.count({ where: { tenantId, name: body.name, state: { not: 'DELETED' }, id: { not: id } } })) throw duplicateName('flow', body.name);
    // Only a move adds to an ingester's fan-out: an edit of a flow that stays keeps working
    // on an ingester already past the limit (one from before it, or a lowered limit).
    if (current.ingesterId !== refs.ingesterId) await assertFanOut(tx, app, tenantId, refs.ingesterId, id);
    return tx.deliveryFlow.update({ where: { id }, data: { name: body.name, ingesterId: refs.ingesterId, destinationId: refs.destinationId, filter: refs.filter as object } });
  });
  await announce(app, { kind: 'flow', id, tenantId });
  return row;
}
