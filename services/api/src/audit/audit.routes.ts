import { AppError } from '@hookline/errors';
import { idRangeWhere } from '../http/id-window';
import { findPage, readPage, readTimeRange, stringParam } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { asObject, iso, ok } from '../lib/format';
import type { AuditLog } from '../lib/models';
import type { AuditOutcome } from './audit-log';

const LEVELS: Record<string, AuditOutcome> = { info: 'success', warn: 'client_error', error: 'server_error' };
const LEVEL_OF: Record<AuditOutcome, string> = { success: 'info', client_error: 'warn', server_error: 'error' };

function auditToView(row: AuditLog): Record<string, unknown> {
  const [outcome, status] = row.outcome.split(':') as [AuditOutcome, string | undefined];
  return {
    id: row.id,
    actor: row.actor,
    action: row.action,
    resource_id: row.resourceId,
    params: asObject(row.params),
    outcome,
    status: status ? Number(status) : null,
    level: LEVEL_OF[outcome] ?? 'info',
    request_id: row.requestId,
    created_at: iso(row.createdAt),
  };
}

const auditView = {
  type: 'object',
  required: ['id', 'actor', 'action', 'params', 'outcome', 'level', 'created_at'],
  properties: {
    id: { type: 'string', pattern: '^aud_' },
    actor: { type: 'string', description: 'api_key:<id>, user:<id> or cluster:<id>' },
    action: { type: 'string', description: 'operationId of the route, e.g. ingesters.create' },
    resource_id: { type: ['string', 'null'] },
    params: { type: 'object', description: 'Path parameters and body, secrets redacted' },
    outcome: { type: 'string', enum: ['success', 'client_error', 'server_error'] },
    status: { type: ['integer', 'null'] },
    level: { type: 'string', enum: ['info', 'warn', 'error'] },
    request_id: { type: ['string', 'null'] },
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const auditRoutes: AuthedRoute[] = [
  {
    auth: 'credential',
    tenant: 'path',
    scope: 'read:audit',
    method: 'get',
    path: '/v1/tenants/:tid/audit-logs',
    operationId: 'audit.list',
    doc: { summary: 'Audit log of every write (newest first)', tag: 'Audit', response: listOf('audit_logs', auditView), query: ['limit', 'cursor', 'offset', 'level', 'action', 'since', 'until'] },
    handler: async (ctx) => {
      const page = readPage(ctx.query, 'aud');
      const level = stringParam(ctx.query, 'level');
      if (level !== undefined && !LEVELS[level]) throw AppError.validation([{ field: 'level', message: 'must be one of: info, warn, error' }]);
      const range = readTimeRange(ctx.query);
      const action = stringParam(ctx.query, 'action');
      const where = {
        tenantId: ctx.tenantId,
        ...(level ? { outcome: { startsWith: `${LEVELS[level]}:` } } : {}),
        // created_at has no index: the id bounds (id-window.ts) let (tenant_id, id) read the window.
        ...(range ? { createdAt: range, AND: idRangeWhere('aud', range) } : {}),
        ...(action ? { action } : {}),
      };
      const result = await findPage(page, (a) => ctx.app.prisma.auditLog.findMany({ ...a, where: { ...where, ...a.where } }));
      return ok(listBody('audit_logs', result, auditToView));
    },
  },
];
