import { shownStatus } from '@hookline/delivery';
import type { JsonSchema } from '../http/validate';
import { iso } from '../lib/format';
import type { Delivery, DeliveryAttempt } from '../lib/models';

export const DELIVERY_STATUSES = ['pending', 'delivering', 'delivered', 'failed', 'exhausted', 'replaying'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export function deliveryToView(row: Delivery): Record<string, unknown> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    event_id: row.eventId,
    flow_id: row.flowId,
    destination_id: row.destinationId,
    status: shownStatus(row.status, row.leaseUntil),
    attempt_count: row.attemptCount,
    next_attempt_at: iso(row.nextAttemptAt),
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    replay_count: row.replayCount,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    delivered_at: iso(row.deliveredAt),
    exhausted_at: iso(row.exhaustedAt),
  };
}

export function attemptToView(row: DeliveryAttempt): Record<string, unknown> {
  return {
    id: row.id,
    delivery_id: row.deliveryId,
    number: row.number,
    status_code: row.statusCode,
    response_body: row.responseBody,
    error_kind: row.errorKind,
    error: row.error,
    started_at: iso(row.startedAt),
    duration_ms: row.durationMs,
    via: row.via,
  };
}

const ts = { type: 'string', format: 'date-time' };
const tsOrNull = { type: ['string', 'null'], format: 'date-time' };

export const deliveryView: JsonSchema = {
  type: 'object',
  required: ['id', 'event_id', 'destination_id', 'status', 'attempt_count', 'created_at'],
  properties: {
    id: { type: 'string', pattern: '^dlv_' },
    tenant_id: { type: 'string' },
    event_id: { type: 'string' },
    flow_id: { type: 'string' },
    destination_id: { type: 'string' },
    status: {
      type: 'string',
      enum: [...DELIVERY_STATUSES],
      description: 'delivering: a deliverer or edge agent holds it now (a live lease over a pending, failed or replaying delivery; ?status= filters follow the same rule)',
    },
    attempt_count: { type: 'integer' },
    next_attempt_at: ts,
    last_status_code: { type: ['integer', 'null'] },
    last_error: { type: ['string', 'null'] },
    replay_count: { type: 'integer' },
    created_at: ts,
    updated_at: ts,
    delivered_at: tsOrNull,
    exhausted_at: tsOrNull,
  },
};

export const attemptView: JsonSchema = {
  type: 'object',
  required: ['id', 'delivery_id', 'number', 'status_code', 'started_at', 'duration_ms'],
  properties: {
    id: { type: 'string' },
    delivery_id: { type: 'string' },
    number: { type: 'integer', description: '1 for the first attempt' },
    status_code: { type: ['integer', 'null'], description: 'HTTP status; null when no response arrived' },
    response_body: { type: ['string', 'null'], description: 'Truncated' },
    error_kind: { type: ['string', 'null'] },
    error: { type: ['string', 'null'] },
    started_at: ts,
    duration_ms: { type: 'integer' },
    via: { type: 'string' },
  },
};
