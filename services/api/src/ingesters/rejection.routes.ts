import type { AuthedRoute } from '../http/route';
import { idRangeWhere } from '../http/id-window';
import { findPage, readPage, readTimeRange } from '../http/pagination';
import { listBody, listOf } from '../http/schemas';
import { iso, ok } from '../lib/format';
import type { IngestRejection } from '../lib/models';
import { findIngester } from './ingester.service';

function rejectionToView(r: IngestRejection): Record<string, unknown> {
  return { id: r.id, ingester_id: r.ingesterId, reason_code: r.reasonCode, detail: r.detail, source_ip: r.sourceIp, created_at: iso(r.createdAt) };
}

const rejectionView = {
  type: 'object',
  required: ['id', 'ingester_id', 'reason_code', 'created_at'],
  properties: {
    id: { type: 'string' },
    ingester_id: { type: 'string' },
    reason_code: { type: 'string', description: 'e.g. provider_verification_failed' },
    detail: { type: ['string', 'null'] },
    source_ip: { type: ['string', 'null'] },
    created_at: { type: 'string', format: 'date-time' },
  },
};

/** Requests an ingester refused before an event existed (bad signature, allowlist, …). */
export const rejectionRoutes: AuthedRoute[] = [
  {
    auth: 'credential',
    tenant: 'path',
    scope: 'read:ingesters',
    method: 'get',
    path: '/v1/tenants/:tid/ingesters/:iid/rejections',
    operationId: 'ingesters.rejections',
    doc: { summary: 'Refused requests of an ingester, newest first', tag: 'Ingesters (endpoints)', response: listOf('rejections', rejectionView), query: ['limit', 'cursor', 'offset', 'since', 'until'], errors: [404] },
    handler: async (ctx) => {
      const ingesterId = ctx.params['iid']!;
      // As its GET: a DELETED ingester is not found.
      await findIngester(ctx.app, ctx.tenantId, ingesterId);
      const page = readPage(ctx.query, 'rej');
      const range = readTimeRange(ctx.query);
      // created_at has no index: the id bounds (id-window.ts) let (ingester_id, id) read the window.
      const where = { tenantId: ctx.tenantId, ingesterId, ...(range ? { createdAt: range, AND: idRangeWhere('rej', range) } : {}) };
      const result = await findPage(page, (a) => ctx.app.prisma.ingestRejection.findMany({ ...a, where: { ...where, ...a.where } }));
      return ok(listBody('rejections', result, rejectionToView));
    },
  },
];
