import type { JsonSchema } from '../http/validate';
import { iso } from '../lib/format';
import type { Event } from '../lib/models';

export const EVENT_STATUSES = ['received', 'validated', 'filtered', 'delivered', 'acked', 'failed', 'dlq_queued', 'replayed', 'rejected'] as const;

/** The status timeline: each step that happened, in order. */
function timeline(row: Event): { status: string; at: string }[] {
  const steps: [string, Date | null][] = [
    ['received', row.receivedAt],
    ['validated', row.validatedAt],
    ['filtered', row.filteredAt],
    ['failed', row.failedAt],
    ['delivered', row.deliveredAt],
  ];
  return steps.filter((s): s is [string, Date] => s[1] !== null).sort((a, b) => a[1].getTime() - b[1].getTime()).map(([status, at]) => ({ status, at: iso(at) }));
}

export function eventToView(row: Event, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    ingester_id: row.ingesterId,
    type: row.type,
    status: row.status,
    status_reason: row.statusReason,
    correlation_id: row.correlationId,
    source_ip: row.sourceIp,
    received_at: iso(row.receivedAt),
    validated_at: iso(row.validatedAt),
    filtered_at: iso(row.filteredAt),
    delivered_at: iso(row.deliveredAt),
    failed_at: iso(row.failedAt),
    updated_at: iso(row.updatedAt),
    timeline: timeline(row),
    ...extra,
  };
}

const tsOrNull = { type: ['string', 'null'], format: 'date-time' };

export const eventView: JsonSchema = {
  type: 'object',
  required: ['id', 'ingester_id', 'status', 'correlation_id', 'received_at', 'timeline'],
  properties: {
    id: { type: 'string', pattern: '^evt_' },
    tenant_id: { type: 'string' },
    ingester_id: { type: 'string' },
    type: { type: ['string', 'null'] },
    status: { type: 'string', enum: [...EVENT_STATUSES] },
    status_reason: {
      type: ['string', 'null'],
      description:
        'Why an event is where it is. Routed to no delivery (status filtered): no_matching_flow (no ACTIVE flow of its ingester leads to an ACTIVE or DISABLED destination), ' +
        'flow_not_active (its ingester\'s flows are all DRAFT or DISABLED: the route is switched off), filter_rejected (every flow\'s filter rejected it), ' +
        'ingester_filter_rejected (its ingester\'s own filters rejected it, so none of the ingester\'s flows was tried). ' +
        'A flow to a DISABLED destination still routes: its deliveries are created pending and held until the destination is enabled. ' +
        'Also: replayed (delivered after a replay), payload_purged (the retained payload was removed).',
    },
    correlation_id: { type: 'string' },
    source_ip: { type: ['string', 'null'] },
    received_at: { type: 'string', format: 'date-time' },
    validated_at: tsOrNull,
    filtered_at: tsOrNull,
    delivered_at: tsOrNull,
    failed_at: tsOrNull,
    updated_at: tsOrNull,
    timeline: { type: 'array', items: { type: 'object', required: ['status', 'at'], properties: { status: { type: 'string' }, at: { type: 'string', format: 'date-time' } } } },
    payload_retained: { type: 'boolean', description: 'Whether the raw payload is still stored (replay needs it)' },
    deliveries: {
      type: 'array',
      items: { type: 'object', required: ['id', 'destination_id', 'status'], properties: { id: { type: 'string' }, destination_id: { type: 'string' }, status: { type: 'string' }, attempt_count: { type: 'integer' } } },
    },
  },
};
