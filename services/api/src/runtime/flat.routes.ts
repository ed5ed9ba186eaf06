import { attemptView } from '../deliveries/delivery.view';
import { createDestinationReply, listDestinations } from '../destinations/destination.routes';
import { createDestinationBody, destinationView } from '../destinations/destination.schema';
import { createFlowReply, listFlows } from '../flows/flow.routes';
import { createFlowBody, flowView } from '../flows/flow.schema';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
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
import { traces } from './traces';

const TAG = 'Runtime (flat)';
const flat = { auth: 'credential', tenant: 'flat' } as const;
const PAGE = ['limit', 'cursor', 'offset'] as const;

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
    doc: { summary: 'Event traces (trace_id = correlation id) from receipt through every attempt', tag: TAG, response: listOf('traces', { type: 'object', required: ['trace_id', 'event_id', 'steps'] }), query: [...PAGE, 'event_id', 'correlation_id', 'source_id', 'status', 'since', 'until'] },
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

