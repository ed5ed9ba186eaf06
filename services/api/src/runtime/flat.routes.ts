import { attemptView } from '../deliveries/delivery.view';
import { createDestinationReply, listDestinations } from '../destinations/destination.routes';
import { createDestinationBody, destinationView } from '../destinations/destination.schema';
import { createFlowReply, listFlows } from '../flows/flow.routes';
import { createFlowBody, flowView } from '../flows/flow.schema';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import type { JsonSchema } from '../http/validate';
import { createIngesterReply, listIngesters } from '../ingesters/ingester.routes';
import { createIngesterBody, ingesterView } from '../ingesters/ingester.schema';
import { STATE_FILTER_PARAMS } from '../lifecycle/state-filter';
import { requirePlan } from '../lib/config-writes';
import { ok } from '../lib/format';
import { evidenceBundleSchema } from '../openapi/evidence-schemas';
import { createSavedPayload, listSavedPayloads, savedPayloadSchemas } from '../saved-payloads/saved-payload.routes';
import { listTenantAttempts } from './attempts';
import { evidence, retainedPayloads } from './evidence';
import { overview, sources } from './overview';
import { targetHealth, targetHealthView } from './target-health';
import { TRACE_MAX_ATTEMPTS, TRACE_MAX_DELIVERIES, traces } from './traces';

const TAG = 'Runtime (flat)';
const flat = { auth: 'credential', tenant: 'flat' } as const;
const PAGE = ['limit', 'cursor', 'offset'] as const;

/** One trace of GET /v1/traces (runtime/traces.ts); steps are loose (their fields depend on `name`). */
const traceView: JsonSchema = {
  type: 'object',
  required: ['trace_id', 'event_id', 'steps', 'deliveries_truncated', 'attempts_truncated'],
  properties: {
    trace_id: { type: 'string' },
    event_id: { type: 'string' },
    ingester_id: { type: 'string' },
    status: { type: 'string' },
    deliveries_truncated: { type: 'boolean', description: `true: the event has more than ${TRACE_MAX_DELIVERIES} deliveries; the trace carries the first ${TRACE_MAX_DELIVERIES} by flow id` },
    attempts_truncated: { type: 'boolean', description: `true: some delivery of the trace has more than ${TRACE_MAX_ATTEMPTS} attempts; its delivery.created step says which` },
    deliveries_url: { type: 'string', description: 'Only when deliveries_truncated: the paged list of all the deliveries of the event' },
    steps: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'at'],
        properties: {
          name: { type: 'string', description: 'received, validated, filtered, delivery.created, delivery.attempt, delivered, failed' },
          at: { type: 'string', format: 'date-time' },
          delivery_id: { type: 'string' },
          attempt_count: { type: 'integer', description: 'delivery.created: attempts the delivery has made in all' },
          attempts_truncated: { type: 'boolean', description: `delivery.created: true when only the latest ${TRACE_MAX_ATTEMPTS} of its attempts follow` },
          attempts_url: { type: 'string', description: 'delivery.created, only when attempts_truncated: the paged list of all its attempts' },
        },
      },
    },
  },
};

/**
 * The UI's flat routes: the tenant is `X-Tenant-ID` or the credential's. They read and
 * write the same rows through the same functions as the tenant-scoped family, which is the
 * authoritative contract; these use the customer terms (endpoints, targets, flows).
 */
export const flatRoutes: AuthedRoute[] = [
  {
    ...flat,
    scope: 'read:deliveries',
    method: 'get',
    path: '/v1/overview',
    operationId: 'flat.overview',
    doc: { summary: 'Counts for the dashboard: configuration by state, last 24 h of events and deliveries, DLQ size', tag: TAG, response: { type: 'object', required: ['tenant_id', 'dlq_size'] } },
    handler: async (ctx) => ok(await overview(ctx.app, ctx.tenantId, ctx.principal.plan)),
  },
  { ...flat, scope: 'read:ingesters', method: 'get', path: '/v1/endpoints', operationId: 'flat.endpoints.list', doc: { summary: 'List endpoints (ingesters)', tag: TAG, response: listOf('endpoints', ingesterView), query: [...PAGE, ...STATE_FILTER_PARAMS] }, handler: async (ctx) => ok(await listIngesters(ctx, 'endpoints')) },
  { ...flat, scope: 'write:ingesters', method: 'post', path: '/v1/endpoints', operationId: 'flat.endpoints.create', body: createIngesterBody, doc: { summary: 'Create an endpoint (ingester)', tag: TAG, response: ingesterView, errors: [403, 409, 422] }, handler: (ctx) => createIngesterReply(ctx) },
  { ...flat, scope: 'read:destinations', method: 'get', path: '/v1/targets', operationId: 'flat.targets.list', doc: { summary: 'List targets (destinations)', tag: TAG, response: listOf('targets', destinationView), query: [...PAGE, ...STATE_FILTER_PARAMS] }, handler: async (ctx) => ok(await listDestinations(ctx, 'targets')) },
  { ...flat, scope: 'write:destinations', method: 'post', path: '/v1/targets', operationId: 'flat.targets.create', body: createDestinationBody, doc: { summary: 'Create a target (destination)', tag: TAG, response: destinationView, errors: [409, 422] }, handler: createDestinationReply },
  {
    ...flat,
    scope: 'read:destinations',
    method: 'get',
    path: '/v1/targets/:id/health',
    operationId: 'flat.targets.health',
    doc: { summary: 'Target health: success rate, latency percentiles, consecutive failures, last error, circuit breaker', tag: TAG, response: targetHealthView, errors: [404] },
    handler: async (ctx) => ok(await targetHealth(ctx.app, ctx.tenantId, ctx.params['id']!)),
  },
  { ...flat, scope: 'read:flows', method: 'get', path: '/v1/flows', operationId: 'flat.flows.list', doc: { summary: 'List flows', tag: TAG, response: listOf('flows', flowView), query: [...PAGE, ...STATE_FILTER_PARAMS, 'source_id', 'destination_id'] }, handler: async (ctx) => ok(await listFlows(ctx, 'flows')) },
  { ...flat, scope: 'write:flows', method: 'post', path: '/v1/flows', operationId: 'flat.flows.create', body: createFlowBody, doc: { summary: 'Create a flow', tag: TAG, response: flowView, errors: [409, 422] }, handler: createFlowReply },
  {
    ...flat,
    scope: 'read:deliveries',
    method: 'get',
    path: '/v1/delivery-attempts',
    operationId: 'flat.attempts',
    doc: { summary: 'Delivery attempts, newest first (status: succeeded | failed)', tag: TAG, response: listOf('delivery_attempts', attemptView), query: [...PAGE, 'status', 'delivery_id', 'event_id', 'destination_id', 'since', 'until'] },
    handler: async (ctx) => ok(await listTenantAttempts(ctx.app, ctx.tenantId, ctx.query)),
  },
  { ...flat, scope: 'read:saved-payloads', method: 'get', path: '/v1/saved-payloads', operationId: 'flat.savedPayloads.list', doc: { summary: 'List saved payloads', tag: TAG, response: savedPayloadSchemas.list, query: PAGE }, handler: async (ctx) => ok(await listSavedPayloads(ctx)) },
  { ...flat, scope: 'write:saved-payloads', method: 'post', path: '/v1/saved-payloads', operationId: 'flat.savedPayloads.create', body: savedPayloadSchemas.body, doc: { summary: 'Save a payload template', tag: TAG, response: savedPayloadSchemas.view, errors: [409] }, handler: createSavedPayload },
  {
    ...flat,
    scope: 'read:events',
    method: 'get',
    path: '/v1/traces',
    operationId: 'flat.traces',
    doc: {
      summary: 'Event traces (trace_id = correlation id) from receipt through its deliveries\' attempts, capped per event and per delivery',
      description:
        `One trace per event, its steps in time order. A trace carries at most ${TRACE_MAX_DELIVERIES} deliveries (an event has one per flow; ` +
        `the first by flow id) and, of each delivery, its latest ${TRACE_MAX_ATTEMPTS} attempts (by attempt number). ` +
        '`deliveries_truncated: true` says the event has more deliveries (all of them: `deliveries_url`, `GET /v1/deliveries?event_id=…`); ' +
        'a `delivery.created` step\'s `attempts_truncated: true` says that delivery has older attempts (all of them: its `attempts_url`, ' +
        '`GET /v1/delivery-attempts?delivery_id=…`; `attempt_count` is its total), and the trace\'s `attempts_truncated` says some delivery\'s were left out. ' +
        'Below the caps a trace is whole and both flags are false.',
      tag: TAG,
      response: listOf('traces', traceView),
      query: [...PAGE, 'event_id', 'correlation_id', 'source_id', 'status', 'since', 'until'],
    },
    handler: async (ctx) => ok(await traces(ctx.app, ctx.tenantId, ctx.query)),
  },
  {
    ...flat,
    scope: 'read:evidence',
    method: 'get',
    path: '/v1/evidence',
    operationId: 'flat.evidence',
    doc: {
      summary: 'Delivery evidence per finished delivery: payload sha256, attempts, final status, and each attempt\'s keyed receipt with its Merkle inclusion proof',
      tag: TAG,
      response: listOf('evidence', { type: 'object', required: ['delivery_id', 'event_id', 'outcome', 'payload', 'receipts'], properties: { receipts: { type: 'array', items: evidenceBundleSchema } } }),
      query: [...PAGE, 'status', 'event_id', 'destination_id', 'source_id', 'since', 'until'],
    },
    handler: async (ctx) => ok(await evidence(ctx.app, ctx.tenantId, ctx.query)),
  },
  {
    ...flat,
    scope: 'read:events',
    method: 'get',
    path: '/v1/retained-payloads',
    operationId: 'flat.retainedPayloads',
    doc: { summary: 'Retained raw payloads (metadata; Pro plan and above)', tag: TAG, response: listOf('retained_payloads', { type: 'object', required: ['event_id', 'size_bytes', 'sha256'] }), query: PAGE, errors: [403] },
    handler: async (ctx) => {
      requirePlan(ctx.principal.plan, 'pro', 'Retained payloads');
      return ok(listBody('retained_payloads', await retainedPayloads(ctx.app, ctx.tenantId, ctx.query), ({ id: _id, ...rest }) => rest));
    },
  },
  {
    ...flat,
    scope: 'read:ingesters',
    method: 'get',
    path: '/v1/sources',
    operationId: 'flat.sources',
    doc: { summary: 'Webhook sources by provider, with the last 24 h of traffic', tag: TAG, response: { type: 'object', required: ['sources', 'supported_providers'] } },
    handler: async (ctx) => ok(await sources(ctx.app, ctx.tenantId)),
  },
];

