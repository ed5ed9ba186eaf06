// JSON Schemas of the agent-facing bodies: ajv validates requests with them and the
// OpenAPI document shows them (edge.openapi.ts). Wire types: @hookline/delivery edge-protocol.
import { ERROR_KINDS, MAX_RELEASES_PER_REQUEST, MAX_REPORTS_PER_REQUEST } from '@hookline/delivery';

const signed = {
  agent_id: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._:@-]+$' },
  agent_version: { type: 'string', maxLength: 100 },
  nonce: { type: 'string', minLength: 8, maxLength: 100 },
};

export const workRequestSchema = {
  type: 'object',
  required: ['agent_id', 'agent_version', 'nonce', 'max', 'wait_seconds'],
  properties: {
    ...signed,
    max: { type: 'integer', minimum: 0, maximum: 1000, description: '0 is a heartbeat: answered at once, nothing leased' },
    wait_seconds: { type: 'integer', minimum: 0, maximum: 120 },
  },
  additionalProperties: false,
};

// An agent cannot know that the service could not sign (it never holds the destination
// secrets): a report claiming `signing_unavailable` is refused (400) like an unknown kind.
const REPORTABLE_ERROR_KINDS = ERROR_KINDS.filter((k) => k !== 'signing_unavailable');

export const reportSchema = {
  type: 'object',
  required: ['delivery_id', 'lease_owner', 'status_code', 'started_at', 'duration_ms'],
  properties: {
    delivery_id: { type: 'string', maxLength: 64 },
    lease_owner: { type: 'string', maxLength: 200 },
    status_code: { type: ['integer', 'null'], minimum: 100, maximum: 599 },
    response_body: { type: ['string', 'null'] },
    response_headers: { type: ['object', 'null'], additionalProperties: { type: 'string' } },
    error_kind: { type: ['string', 'null'], enum: [...REPORTABLE_ERROR_KINDS, null] },
    error: { type: ['string', 'null'] },
    started_at: {
      type: 'string',
      format: 'date-time',
      description:
        "when the attempt started, on the service's clock (the agent's corrected one): a real instant (no leap second, an offset ±hh:mm or Z) from (longest lease + EDGE_SIGNATURE_TOLERANCE_SECONDS + EDGE_LEASE_MS) before the service's clock to EDGE_SIGNATURE_TOLERANCE_SECONDS after it (defaults: 11.5 min before, 5 min after), else the whole request is a 400 naming `reports.<i>.started_at`; the longest lease is leaseMsFor(EDGE_LEASE_MS, max(300000, DELIVERY_TIMEOUT_MS)) (report-times.ts)",
    },
    duration_ms: { type: 'integer', minimum: 0, maximum: 86_400_000 },
  },
  additionalProperties: false,
};

/** A signed agent request carrying one list (`reports`, `releases`) of 1 to `max` items. */
const signedList = (field: string, max: number, items: Record<string, unknown>): Record<string, unknown> => ({
  type: 'object',
  required: ['agent_id', 'agent_version', 'nonce', field],
  properties: { ...signed, [field]: { type: 'array', minItems: 1, maxItems: max, items } },
  additionalProperties: false,
});

export const reportRequestSchema = signedList('reports', MAX_REPORTS_PER_REQUEST, reportSchema);

export const releaseSchema = {
  type: 'object',
  required: ['delivery_id', 'lease_owner'],
  properties: {
    delivery_id: { type: 'string', minLength: 1, maxLength: 64, description: 'the delivery id (the work item\'s id)' },
    lease_owner: { type: 'string', minLength: 1, maxLength: 200, description: 'the work item\'s lease_owner: only that lease is given back' },
  },
  additionalProperties: false,
};

export const releaseRequestSchema = signedList('releases', MAX_RELEASES_PER_REQUEST, releaseSchema);

export const workItemSchema = {
  type: 'object',
  required: ['id', 'lease_owner', 'url', 'method', 'headers', 'body_base64', 'timeout_ms', 'lease_until'],
  properties: {
    id: { type: 'string', pattern: '^dlv_' },
    lease_owner: { type: 'string' },
    url: { type: 'string', description: 'may be a private address: it is resolved by the agent, inside the customer network' },
    method: { type: 'string', enum: ['POST', 'PUT', 'PATCH'] },
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'the exact outbound headers, signatures and X-Service-Delivery-Idempotency-Key included' },
    body_base64: { type: 'string', description: 'the exact raw bytes of the event' },
    timeout_ms: { type: 'integer' },
    lease_until: { type: 'string', format: 'date-time' },
  },
};

export const workResponseSchema = {
  type: 'object',
  required: ['deliveries', 'response_body_limit'],
  properties: { deliveries: { type: 'array', items: workItemSchema }, response_body_limit: { type: 'integer' } },
};

/** An answer of one result per item of the request, in its order: `{results: [...]}`. */
const resultsOf = (properties: Record<string, unknown>, description?: string): Record<string, unknown> => ({
  type: 'object',
  required: ['results'],
  properties: { results: { type: 'array', ...(description ? { description } : {}), items: { type: 'object', required: ['delivery_id', 'result'], properties } } },
});

export const reportResponseSchema = resultsOf({
  delivery_id: { type: 'string' },
  result: { type: 'string', enum: ['recorded', 'ignored'] },
  attempt: { type: 'integer' },
  status: { type: 'string', enum: ['delivered', 'failed', 'exhausted'] },
  reason: { type: 'string', enum: ['not_leased'] },
});

export const releaseResponseSchema = resultsOf(
  {
    delivery_id: { type: 'string' },
    result: { type: 'string', enum: ['released', 'ignored'], description: 'released: the lease was dropped, the delivery can be leased again at once (no attempt recorded)' },
    reason: { type: 'string', enum: ['not_leased'], description: 'that lease does not hold the delivery (reported, expired and re-leased, released already, or not this cluster\'s)' },
  },
  'one per requested release, in the request\'s order',
);
