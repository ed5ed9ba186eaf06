import type { QueryParam } from '../http/route';
import { MAX_LIMIT, MAX_OFFSET } from '../http/pagination';

const str = { type: 'string' };

const ISO_TIMESTAMP_TEXT =
  'an ISO 8601 date-time with Z or an offset, ±hh:mm or ±hhmm (2024-01-01T00:00:00Z), or a plain date (2024-01-01: midnight UTC); a time without an offset, or an impossible date, is a 400';
const ISO_TIMESTAMP_SCHEMA = { type: 'string', anyOf: [{ format: 'date-time' }, { format: 'date' }, { pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?[+-]\\d{4}$' }] };

const lifecycleStates = { type: 'string', enum: ['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED'] };

/** Query parameters shared by the list routes (SPEC.md, Pagination and filtering); `name` when it differs from the key. */
export const QUERY_PARAMETERS: Record<QueryParam, { name?: string; description: string; schema: Record<string, unknown> }> = {
  limit: { description: `Page size (default 20, max ${MAX_LIMIT})`, schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: 20 } },
  cursor: { description: "Opaque cursor from this list's next_cursor; anything else, a cursor of another list included, is a 400 validation-error on cursor", schema: str },
  offset: { description: 'Offset mode: rows to skip (default 0); not combinable with cursor', schema: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 } },
  status: { description: 'Status filter', schema: str },
  event_id: { description: 'Event filter', schema: str },
  destination_id: { description: 'Destination (target) filter', schema: str },
  source_id: { description: 'Source endpoint (ingester) filter', schema: str },
  delivery_id: { description: 'Delivery filter', schema: str },
  level: { description: 'Log level: info, warn, error', schema: { type: 'string', enum: ['info', 'warn', 'error'] } },
  since: { description: `Start of the time window, inclusive: ${ISO_TIMESTAMP_TEXT}`, schema: ISO_TIMESTAMP_SCHEMA },
  until: { description: `End of the time window, exclusive: ${ISO_TIMESTAMP_TEXT}; before since is a 400 validation-error on until`, schema: ISO_TIMESTAMP_SCHEMA },
  state: { description: 'Lifecycle state (default: all but DELETED); also accepted as status', schema: lifecycleStates },
  lifecycle_status: { name: 'status', description: 'Lifecycle state, an alias of state (SPEC.md names the filter status); when both are given they must be equal (else 400)', schema: lifecycleStates },
  correlation_id: { description: 'Correlation id filter', schema: str },
  action: { description: 'Action filter: the operationId of the write, e.g. ingesters.create', schema: str },
};

export const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'instance'],
  properties: {
    type: { type: 'string', format: 'uri' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string', description: 'The request id (also in X-Request-Id)' },
    errors: { type: 'array', items: { type: 'object', required: ['field', 'message'], properties: { field: str, message: str } }, description: 'validation-error' },
    required_scope: { type: 'string', description: 'insufficient-scope' },
    resource_id: { type: 'string', description: 'permission-denied' },
    idempotency_key: { type: 'string', description: 'idempotency-conflict, idempotency-outcome-unknown: the Idempotency-Key as sent' },
    retry_after_seconds: { type: 'integer', description: 'rate-limit-exceeded' },
    required_plan: { type: 'string', description: 'plan-required' },
    tool_group: { type: 'string', description: 'write-tool-disabled (MCP)' },
    current_state: { type: 'string', description: 'conflict: the lifecycle state of the object the transition was asked of' },
    reference: { type: 'string', description: "conflict (flow apply): the id of the flow's ingester or destination that blocks it" },
    reference_kind: { type: 'string', enum: ['ingester', 'destination'], description: 'conflict (flow apply): what reference is' },
    reference_state: { type: 'string', description: "conflict (flow apply): reference's lifecycle state (DISABLED or DELETED)" },
  },
};

/** Which problem types a status can carry, for the response descriptions. */
export const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'validation-error (errors: [{field, message}])',
  401: 'unauthorized: credential missing, invalid, revoked or expired',
  403: 'insufficient-scope (required_scope), permission-denied (resource_id) or plan-required (required_plan)',
  404: 'not-found: missing, or not visible to this tenant',
  409:
    'conflict (duplicate name, illegal lifecycle transition; or "still being processed": the first request with this Idempotency-Key still runs), idempotency-conflict (idempotency_key: the key was used with another request) or ' +
    'idempotency-outcome-unknown (idempotency_key): the first request with this Idempotency-Key stopped before its outcome was recorded; it may have been applied: check the resource, then retry with a new key',
  413: 'payload-too-large: the body exceeds API_BODY_LIMIT',
  415: 'unsupported-media-type: the body is not sent as application/json, or its encoding or charset is not supported',
  422: 'unprocessable-entity: well-formed but refers to something that does not exist',
  429: 'rate-limit-exceeded (retry_after_seconds, Retry-After)',
  500: 'internal-error. With Idempotency-Key on a write, a 500 is the key\'s answer like any other and is replayed: retry with a new key after checking the resource',
  503: 'service-unavailable: PostgreSQL (or, for a step that needs it such as a destination enable, Redis) is temporarily unreachable; nothing was applied; retry after the Retry-After seconds (with Idempotency-Key on a write, the key is released: retry with the same key)',
};

export const securitySchemes = {
  apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'hk_… API key' },
  bearer: { type: 'http', scheme: 'bearer', description: 'An hk_… API key, or the session JWT from POST /auth/login (HS256)' },
  mcpApiKey: { type: 'apiKey', in: 'header', name: 'X-MCP-API-Key', description: 'mcp_… MCP key (tenant-scoped, MCP scopes); created at /v1/tenants/{tid}/mcp-keys' },
  serviceSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Service-Signature',
    description: 't=<unix s>,v1=<hex HMAC-SHA256(cluster key, "<t>.<raw body>")>, plus X-Service-Timestamp: <unix s>',
  },
};

/** The Idempotency-Key header of every control-API write (the MCP key writes too: one store). */
export const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Kept 24 h per credential: the same key and body from the same credential return the original status and body (Idempotent-Replayed: true); another body is 409 idempotency-conflict; another credential\'s request with the same key is its own request. ' +
    'While the first request with the key is still running (however long: waiting on locks included), the same request again is 409 conflict ("still being processed"; nothing is run): retry later to get the first one\'s answer. ' +
    'Once the first request has started running, its outcome is the key\'s, whatever it is: a 500 is replayed like any answer (the write may have been applied before the failure); retry with a new key after checking the resource. A 503 service-unavailable applied nothing and releases the key. ' +
    'A request refused before it runs (authentication, tenant, scope, body validation) leaves the key untouched, and one that took the key but could not start releases it: only then may the key be used again for a run. ' +
    'A first request not heard from for IDEMPOTENCY_STALE_CLAIM_MS (60 s by default: its server process died, or its outcome could not be recorded) is never run again under the key: when it may have started, the same request is 409 idempotency-outcome-unknown (idempotency_key; it may have been applied: check the resource, then retry with a new key); only one that provably never started loses the key to a retry, which then runs',
  schema: { type: 'string', maxLength: 255 },
};
