import type { JsonSchema } from '../http/validate';
import { iso } from '../lib/format';
import type { Event } from '../lib/models';

// SPEC.md's event statuses. The database enum also holds `rejected`, which nothing sets
// (refused requests are ingest rejections, not events): not published, and refused as a filter.
export const EVENT_STATUSES = ['received', 'validated', 'filtered', 'delivered', 'acked', 'failed', 'dlq_queued', 'replayed'] as const;

/** How statuses move (SPEC.md shows the sequence, not the mapping from delivery statuses). */
export const EVENT_STATUS_DOC =
  "SPEC.md's sequence received → validated → filtered → delivered → acked, failure branch failed → dlq_queued → replayed → delivered. " +
  'How Hookline moves along it: an event is stored validated (the signature and header rules are checked before the write, so received is never stored); ' +
  'filtered once routed (its deliveries are made, or none: see status_reason); then it follows its deliveries: delivered when all are delivered; ' +
  'failed while one failed and waits for its next attempt; dlq_queued when one is exhausted (in the DLQ), straight from filtered when a delivery is exhausted by its first attempt (a 4xx that is not retried, or one attempt allowed); ' +
  'failed → delivered when the failed ones then succeed (SPEC.md lists failed → dlq_queued only; an event whose retries succeed is delivered); ' +
  'replayed when a replay or retry takes one of its deliveries out of the DLQ, then delivered, or dlq_queued again if one is exhausted again. ' +
  'A delivered event stays delivered (a re-send does not move it back). acked is reserved: Hookline has no acknowledgement from a destination beyond its 2xx, so no event becomes acked.';

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
    status: { type: 'string', enum: [...EVENT_STATUSES], description: EVENT_STATUS_DOC },
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
