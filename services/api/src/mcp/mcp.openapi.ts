import * as z from 'zod';
import { MANIFEST_SCHEMA } from '@hookline/evidence';
import { listOf } from '../http/schemas';
import type { ExtraPaths } from '../openapi/build-openapi';
import { ERROR_DESCRIPTIONS, IDEMPOTENCY_KEY_PARAMETER, QUERY_PARAMETERS } from '../openapi/components';
import { jsonSchemaOf } from '../openapi/evidence-schemas';
import { MCP_SCOPE_NEEDS, TOOL_GROUP_NEEDS } from './mcp-grants';
import { createKeyBody } from './mcp-keys';
import { EVIDENCE_DESCRIPTION } from './tools/evidence-tools';
import { bundleSchema, deliverySchema, healthSchema, logEntrySchema, planeSchema } from './tools/output-schemas';

type Doc = Record<string, unknown>;

const MCP_KEY = [{ mcpApiKey: [] }];
/** Key management: a control-API credential, or an MCP key holding mcp:admin:keys. */
const KEY_ADMIN = [{ apiKey: [] }, { bearer: [] }, { mcpApiKey: [] }];
const TAG = 'MCP';

const problem = (status: number, description = ERROR_DESCRIPTIONS[status] ?? 'Error'): Doc => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});
const json = (schema: Doc, description = 'Success'): Doc => ({ description, content: { 'application/json': { schema } } });
const pathParams = (...names: string[]): Doc[] => names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
const errors = (...statuses: number[]): Doc => Object.fromEntries([...statuses, 500].map((s) => [s, problem(s)]));

interface Op {
  operationId: string;
  summary: string;
  description?: string;
  security: readonly Doc[];
  scope?: string;
  params?: Doc[];
  body?: Doc;
  responses: Doc;
}

const op = (o: Op): Doc => ({
  operationId: o.operationId,
  summary: o.summary,
  ...(o.description ? { description: o.description } : {}),
  tags: [TAG],
  security: o.security,
  ...(o.scope ? { 'x-required-scope': o.scope } : {}),
  parameters: o.params ?? [],
  ...(o.body ? { requestBody: { required: true, content: { 'application/json': { schema: o.body } } } } : {}),
  responses: o.responses,
});

/**
 * How every MCP route is rate-limited. X-RateLimit-Limit and X-RateLimit-Remaining describe
 * the bucket that binds, named by X-RateLimit-Scope (tenant or mcp_key): the one that refused,
 * else the one with the fewest tokens left.
 */
const RATE =
  "Rate-limited per tenant as the control API (its plan's RATE_LIMITS bucket, shared with the control API) and per MCP key (the key's own bucket: its rate_limit, else MCP_KEY_RATE_LIMIT, never above the plan's): a token from each, all or none, so a refusal by one spends nothing of the other; 429 rate-limit-exceeded with retry_after_seconds and Retry-After when either is empty. X-RateLimit-Limit and X-RateLimit-Remaining describe the bucket that binds (the one that refused, else the one with the fewest tokens left), named by X-RateLimit-Scope: tenant or mcp_key.";

/** Every MCP route, before anything else (the credential lookup included). */
const STORABLE = 'A NUL (U+0000) in the path, the query or the body is a 400 validation-error (field path, query or the body field), before authentication.';

/**
 * A REST mirror read (SPEC.md, MCP evidence endpoints): MCP key, one scope, the key's and the
 * tenant's rate limits. An `{id}` of another shape than the tool takes is a 404, as an unknown one.
 */
const mirror = (operationId: string, summary: string, scope: string, response: Doc, params: string[] = [], extra: Doc[] = [], description?: string): Doc => ({
  get: op({
    operationId,
    summary,
    description: [description, STORABLE, RATE].filter(Boolean).join(' '),
    security: MCP_KEY,
    scope,
    params: [...pathParams(...params), ...extra],
    responses: { 200: json(response), ...errors(400, 401, 403, ...(params.length ? [404] : []), 429) },
  }),
});
const limitParam = { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } };
const cursorParam = { name: 'cursor', in: 'query', required: false, description: 'next_cursor of the previous page', schema: { type: 'string' } };

const keyView = {
  type: 'object',
  required: ['id', 'name', 'prefix', 'scopes', 'tool_groups', 'rate_limit', 'created_at', 'last_used_at', 'expires_at', 'revoked_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    prefix: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    tool_groups: { type: 'array', items: { type: 'string', enum: ['retry', 'replay', 'configuration'] } },
    rate_limit: {
      type: 'object',
      required: ['per_minute', 'burst', 'source'],
      additionalProperties: false,
      description:
        "The limit of this key's own token bucket now, taken on top of its tenant's plan limit: source key (set at creation), default (MCP_KEY_RATE_LIMIT) or plan (capped at the tenant's plan limit)",
      properties: {
        per_minute: { type: 'integer', minimum: 1 },
        burst: { type: 'integer', minimum: 1 },
        source: { type: 'string', enum: ['key', 'default', 'plan'] },
      },
    },
    created_at: { type: 'string', format: 'date-time' },
    last_used_at: { type: ['string', 'null'], format: 'date-time' },
    expires_at: { type: ['string', 'null'], format: 'date-time' },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    key: { type: 'string', description: 'The mcp_… key: in the creation answer only (stored as sha256)' },
  },
};

/** The list parameters of every control-API list (build-openapi.ts): cursor mode, or offset mode when offset is sent. */
const pageParams = (['limit', 'cursor', 'offset'] as const).map((q) => ({ name: q, in: 'query', required: false, ...QUERY_PARAMETERS[q] }));
/** As on every control-API write (build-openapi.ts); kept in the same store. */
const idempotencyKeyParam = IDEMPOTENCY_KEY_PARAMETER;

/** mcp-grants.ts as text: each MCP scope and write group with the control-API scopes it needs. */
const GRANT_NEEDS = [
  ...Object.entries(MCP_SCOPE_NEEDS).map(([scope, needs]) => `${scope}: ${needs.length ? needs.join(' + ') : 'nothing more'}`),
  ...Object.entries(TOOL_GROUP_NEEDS).map(([group, needs]) => `${group} group: ${needs.join(' + ')}`),
].join('; ');
const KEY_ACCESS =
  "A control-API credential (read:api-keys to list, write:api-keys to change) or an MCP key with mcp:admin:keys; enabling a write group needs write:api-keys. What a key is given is bounded by the giver: an MCP key hands out only MCP scopes it holds and never enables a write group; a control-API credential (an API key, or a session, which holds every scope) gives an MCP scope or enables a write group only when it holds the control-API scopes that do the same over REST (" + GRANT_NEEDS + "), else 403 insufficient-scope (required_scope, missing_scopes) and nothing changes. Writes are audited, fail closed: the audit row is written before the change, and when it cannot be the request is a 500 and nothing changes. A NUL (U+0000) in the path, the query or the body is a 400 validation-error before authentication. Rate-limited per tenant as the control API (the caller's tenant and plan) and, when called with an MCP key, by that key's own bucket too (see the MCP endpoint).";
/**
 * A key-management write. Like every control-API write it takes Idempotency-Key (400 when
 * malformed, 409 idempotency-conflict when reused with another request, 409
 * idempotency-outcome-unknown when its first request's outcome was never recorded). `notes`: a
 * description of what a status means for this operation, over the shared one.
 */
const keyOp = (operationId: string, summary: string, params: string[], status: number, extraErrors: number[], body?: Doc, notes: Record<number, string> = {}): Doc => {
  const described = Object.fromEntries(Object.entries(notes).map(([s, d]) => [s, problem(Number(s), d)]));
  const statuses = [...new Set([400, ...extraErrors, 401, 403, 404, 409, 429])].sort((a, b) => a - b);
  return op({
    operationId,
    summary,
    description: KEY_ACCESS,
    security: KEY_ADMIN,
    params: [...pathParams('tid', ...params), idempotencyKeyParam],
    body,
    responses: { [status]: json(keyView), ...errors(...statuses), ...described },
  });
};

const jsonRpc = { type: 'object', required: ['jsonrpc'], properties: { jsonrpc: { const: '2.0' } }, description: 'JSON-RPC 2.0 message (MCP)' };
const notAllowed = (method: string): Doc => ({
  operationId: `mcp.endpoint.${method}`,
  summary: `${method.toUpperCase()} is not served: the endpoint is stateless (no SSE stream, no session)`,
  tags: [TAG],
  security: [],
  parameters: [],
  responses: errors(405),
});

/** The MCP surface: the Streamable HTTP endpoint, the REST mirror, tool calls and key management. */
export const mcpPaths: ExtraPaths = {
  '/v1/mcp': {
    post: op({
      operationId: 'mcp.endpoint',
      summary: 'MCP Streamable HTTP endpoint (stateless, JSON responses)',
      description:
        'JSON-RPC 2.0 messages of the Model Context Protocol (initialize, tools/list, tools/call, …). Send Accept: application/json, text/event-stream. Each tool needs its MCP scope; write tool groups answer a tool error write-tool-disabled (tool_group) until enabled for the key; access is checked before arguments. Transport errors (bad Accept or content type, malformed JSON or JSON-RPC, an unsupported MCP-Protocol-Version) answer problem details with the request id in instance, as every error (MCP lets the body of such an HTTP error be anything; a JSON-RPC error in a 200 answer stays one). Each request takes one token, a batch one per tools/call, admitted whole or not at all (a batch with more tool calls than a burst never is). ' + RATE,
      security: MCP_KEY,
      body: { oneOf: [jsonRpc, { type: 'array', items: jsonRpc }] },
      responses: {
        200: json({ oneOf: [jsonRpc, { type: 'array', items: jsonRpc }] }, 'JSON-RPC response (an array of them for a batch)'),
        202: { description: 'Notification accepted (no body)' },
        400: problem(
          400,
          'validation-error (errors: [{field, message}]): the body is not JSON, not a JSON-RPC message (or batch of them, at most 100), contains a NUL (U+0000) anywhere, a tool argument included (the whole request is refused, before authentication), or MCP-Protocol-Version names an unsupported version',
        ),
        401: problem(401),
        406: problem(406, 'not-acceptable: Accept lacks application/json or text/event-stream'),
        413: problem(413),
        415: problem(415, 'unsupported-media-type: Content-Type is not application/json'),
        429: json(
          { oneOf: [jsonRpc, { type: 'array', items: jsonRpc }] },
          "rate-limit-exceeded (Retry-After header). The body answers each request in JSON-RPC: a tools/call with a failed tool result carrying the problem details (retry_after_seconds) in _meta['hookline/problem'], any other request with a JSON-RPC error carrying them in data['hookline/problem']",
        ),
        500: problem(500),
      },
    }),
    get: notAllowed('get'),
    delete: notAllowed('delete'),
  },
  '/v1/mcp/health': mirror('mcp.health', 'Service health with build/version metadata', 'mcp:read:health', jsonSchemaOf(healthSchema)),
  '/v1/mcp/endpoints': mirror('mcp.endpoints', 'The MCP endpoints and tools, with the scope or write group each needs and whether this key may call it', 'mcp:read:endpoints', {
    type: 'object',
    required: ['endpoints', 'tools'],
    properties: { endpoints: { type: 'array', items: { type: 'object', required: ['method', 'path', 'scope'] } }, tools: { type: 'array', items: { type: 'object', required: ['name', 'enabled'] } } },
  }),
  '/v1/mcp/evidence/{id}': mirror(
    'mcp.evidence',
    'Evidence bundles (receipt, inclusion proof, root) of a receipt, attempt, delivery, event or Merkle root id, or of the deliveries of an ingester, destination or flow',
    'mcp:read:evidence',
    jsonSchemaOf(z.object({ resource_id: z.string(), receipts: z.array(bundleSchema), next_cursor: z.string().nullable(), has_more: z.boolean() })),
    ['id'],
    [limitParam, cursorParam],
    `As the MCP tool get_evidence. ${EVIDENCE_DESCRIPTION} A limit out of range, or a cursor this list did not issue (one naming a receipt not in this id's list included), is a 400 validation-error; with a cursor too, an id of another tenant, an unknown one or one with no receipts is a 404.`,
  ),
  '/v1/mcp/deliveries/{id}/status': mirror('mcp.deliveryStatus', 'Delivery status and outcome', 'mcp:read:deliveries', jsonSchemaOf(deliverySchema.extend({ outcome: z.string() })), ['id'], [], 'As the MCP tool get_delivery_status. An id that is not a dlv_… id is a 404, as an unknown one or another tenant\'s.'),
  '/v1/mcp/planes': mirror(
    'mcp.planes',
    'Operational planes (control, delivery, edge clusters) and their status, a page at a time',
    'mcp:read:planes',
    jsonSchemaOf(z.object({ planes: z.array(planeSchema), next_cursor: z.string().nullable(), has_more: z.boolean() })),
    [],
    [limitParam, cursorParam],
    'As the MCP tool list_planes: the control and delivery planes on the first page, then the edge clusters of the tenant, newest first, limit (default 20, max 100) a page; while has_more, pass next_cursor as cursor. A limit out of range or a cursor this list did not issue is a 400 validation-error.',
  ),
  '/v1/mcp/logs/{id}': mirror(
    'mcp.logs',
    'Logs of a delivery, event or ingester (attempts, rejections, state, audit), newest first',
    'mcp:read:logs',
    jsonSchemaOf(z.object({ resource_id: z.string(), entries: z.array(logEntrySchema) })),
    ['id'],
    [
      { name: 'level', in: 'query', required: false, schema: { type: 'string', enum: ['info', 'warn', 'error'] } },
      limitParam,
    ],
    'As the MCP tool get_logs. An id that is not a prefixed resource id (xxx_ and 10 to 40 lowercase letters or digits) is a 404, as an unknown one or another tenant\'s; a bad level or limit is a 400.',
  ),
  '/v1/mcp/tools/{name}': {
    post: op({
      operationId: 'mcp.callTool',
      summary: 'Call one MCP tool over plain HTTP (the body is its arguments)',
      description:
        'A read tool needs its MCP scope (403 insufficient-scope); a write tool needs its group enabled for the key (403 write-tool-disabled with tool_group); both are checked before the arguments (400). Write calls are audited, refusals included, fail closed: the audit row (the arguments as the tool parsed them, and the names of arguments it does not take) is written before the tool runs, and when it cannot be the call is a 500 and nothing is changed. ' +
        STORABLE +
        ' ' +
        RATE,
      security: MCP_KEY,
      params: pathParams('name'),
      body: { type: 'object', description: "The tool's input schema (tools/list)" },
      responses: { 200: json({ type: 'object', description: "The tool's output schema (tools/list)" }), ...errors(400, 401, 403, 404, 409, 413, 415, 429) },
    }),
  },
  '/v1/tenants/{tid}/mcp-keys': {
    get: op({
      operationId: 'mcp.keys.list',
      summary: "List the tenant's MCP keys, newest first (never the keys themselves)",
      description: `Paged as every list: limit (default 20, max 100) and cursor (next_cursor of the previous page), or offset; a bad limit, cursor or offset is a 400 validation-error. ${KEY_ACCESS}`,
      security: KEY_ADMIN,
      params: [...pathParams('tid'), ...pageParams],
      responses: { 200: json(listOf('mcp_keys', keyView)), ...errors(400, 401, 403, 404, 429) },
    }),
    post: keyOp('mcp.keys.create', 'Create an mcp_… key (read scopes by default; shown once), optionally with its own rate limit', [], 201, [400, 413, 415, 422], jsonSchemaOf(createKeyBody), {
      422: "unprocessable-entity (errors: [{field, message}]): expires_at is not in the future, or, created with an MCP key, a rate_limit figure is above that key's own effective limit (nothing is created)",
    }),
  },
  '/v1/tenants/{tid}/mcp-keys/{kid}': { delete: keyOp('mcp.keys.revoke', 'Revoke an MCP key at once (its write groups go with it, in the same transaction)', ['kid'], 200, [], undefined, {
    403: "permission-denied (resource_id): the key holds scopes the caller could not grant: a control-API credential must hold the control-API scopes of each of the key's MCP scopes, an MCP key each of those MCP scopes itself. Write groups are not weighed (any credential managing MCP keys may disable them). insufficient-scope when the caller may not manage MCP keys at all",
  }) },
  '/v1/tenants/{tid}/mcp-keys/{kid}/tool-groups/{group}': {
    put: keyOp('mcp.keys.enableToolGroup', 'Enable a write tool group (retry, replay, configuration) for a key', ['kid', 'group'], 200, []),
    delete: keyOp('mcp.keys.disableToolGroup', 'Disable a write tool group for a key', ['kid', 'group'], 200, []),
  },
};

const { $schema: _dialect, $id: _id, ...manifestSchema } = MANIFEST_SCHEMA;
const discoveryDoc = { type: 'object', required: ['@context', '@type', 'schema_version', 'generated_at'] };

/**
 * One GET per published discovery document (the router serves them through a wildcard):
 * `…/v1/` is documented as `…/v1` (express answers both).
 */
export function discoveryPaths(documentPaths: readonly string[]): ExtraPaths {
  return Object.fromEntries(
    documentPaths.map((p) => {
      const path = p.endsWith('/') ? p.slice(0, -1) : p;
      const name = path.split('/').pop() ?? path;
      return [
        path,
        {
          get: {
            operationId: `discovery.${path.split('/')[2]}.${name.replace(/\.json$/, '')}`,
            summary: `Discovery document ${path}`,
            description: 'Public (no tenant data). Generated when the api starts, from the code registries and the test files present.',
            tags: ['Discovery'],
            security: [],
            parameters: [],
            responses: { 200: json(name === 'capability-manifest.json' ? manifestSchema : discoveryDoc), 500: problem(500) },
          },
        },
      ];
    }),
  );
}
