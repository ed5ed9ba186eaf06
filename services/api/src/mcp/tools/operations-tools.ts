import * as z from 'zod';
import { decodeCursor } from '../mcp-evidence';
import { deliveryStatus, health, listDeliveries, OPEN_DELIVERIES_CAP, planes, readiness } from '../mcp-queries';
import { LOG_RESOURCE_ID, logsFor } from '../mcp-logs';
import { deliverySchema, healthSchema, logEntrySchema, planeSchema } from './output-schemas';
import { cursorOf, defineTool, idOf, limit, type AnyTool } from './tool-def';

/** list_planes and GET /v1/mcp/planes: a next_cursor names an edge cluster. */
export const planesCursor = cursorOf((c) => idOf('cls').safeParse(decodeCursor(c)).success);

export const operationsTools: AnyTool[] = [
  defineTool({
    name: 'get_health',
    title: 'Get service health',
    description: 'Service health with build and version metadata.',
    access: { scope: 'mcp:read:health' },
    input: {},
    output: healthSchema,
    run: (ctx) => health(ctx.deps),
  }),
  defineTool({
    name: 'get_readiness',
    title: 'Get readiness',
    description: `Readiness across domains: database, Redis, the delivery queues (ok or not: they are shared by every tenant, so their depths are not shown), this tenant's deliveries (open: its pending, failed and replaying deliveries, counted up to ${OPEN_DELIVERIES_CAP}, open_capped when there are more) and its evidence pipeline (unsealed receipts, latest root).`,
    access: { scope: 'mcp:read:health' },
    input: {},
    output: z.object({ status: z.enum(['ready', 'degraded']), domains: z.record(z.string(), z.looseObject({ ok: z.boolean() })) }),
    run: (ctx) => readiness(ctx.deps, ctx.principal.tenantId),
  }),
  defineTool({
    name: 'get_delivery_status',
    title: 'Get delivery status',
    description: 'Status and outcome of one delivery: attempts, last status code and error, next attempt, delivered or exhausted time.',
    access: { scope: 'mcp:read:deliveries' },
    input: { delivery_id: idOf('dlv') },
    output: deliverySchema.extend({ outcome: z.string() }),
    run: (ctx, args) => deliveryStatus(ctx.deps, ctx.principal.tenantId, args.delivery_id),
  }),
  defineTool({
    name: 'list_deliveries',
    title: 'List deliveries',
    description: 'Deliveries of the tenant, newest first; status=exhausted lists the DLQ.',
    access: { scope: 'mcp:read:deliveries' },
    input: {
      status: deliverySchema.shape.status.optional(),
      event_id: idOf('evt').optional(),
      destination_id: idOf('dst').optional(),
      limit,
      cursor: cursorOf((c) => idOf('dlv').safeParse(c).success),
    },
    output: z.object({ deliveries: z.array(deliverySchema), next_cursor: z.string().nullable() }),
    run: (ctx, args) => listDeliveries(ctx.deps, ctx.principal.tenantId, args),
  }),
  defineTool({
    name: 'list_planes',
    title: 'List operational planes',
    description:
      "The control plane and the delivery plane (first page), then the tenant's edge clusters, newest first, with their status; a page at a time (limit, default 20, max 100): while has_more, pass next_cursor as cursor for the rest.",
    access: { scope: 'mcp:read:planes' },
    input: { limit, cursor: planesCursor },
    output: z.object({ planes: z.array(planeSchema), next_cursor: z.string().nullable(), has_more: z.boolean() }),
    run: (ctx, args) => planes(ctx.deps, ctx.principal.tenantId, args),
  }),
  defineTool({
    name: 'get_logs',
    title: 'Get resource logs',
    description: 'Log entries of a resource, newest first: delivery attempts, ingest rejections, event state and audit entries.',
    access: { scope: 'mcp:read:logs' },
    input: { id: z.string().regex(LOG_RESOURCE_ID, 'a resource id'), level: z.enum(['info', 'warn', 'error']).optional(), limit },
    output: z.object({ resource_id: z.string(), entries: z.array(logEntrySchema) }),
    run: (ctx, args) => logsFor(ctx.deps, ctx.principal.tenantId, args.id, args),
  }),
];
