import type { ApiPlugin } from '../app';
import { loadEdgeConfig } from './edge-config';
import { createEdgeDeps } from './edge-deps';
import { createEdgeRouter } from './edge.router';
import { releaseRequestSchema, releaseResponseSchema, reportRequestSchema, reportResponseSchema, workRequestSchema, workResponseSchema } from './edge.schemas';

const SIGNED =
  'Signed with the cluster key issued at enrollment: X-Service-Timestamp: <unix s> and X-Service-Signature: t=<unix s>,v1=<hex HMAC-SHA256(key, "<t>.<raw body>")>. ' +
  'Outside EDGE_SIGNATURE_TOLERANCE_SECONDS, a wrong key or signature, an unknown cluster, or a signature already used → 401 (no delivery data).';

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } });

function operation(operationId: string, summary: string, description: string, request: object, response: object) {
  return {
    post: {
      operationId,
      summary,
      description: `${description} ${SIGNED}`,
      tags: ['Edge'],
      security: [{ serviceSignature: [] }],
      parameters: [{ name: 'cid', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: { required: true, content: { 'application/json': { schema: request } } },
      responses: {
        200: { description: 'Success', content: { 'application/json': { schema: response } } },
        400: problem('Invalid body'),
        401: problem('Bad, expired, replayed or missing signature'),
        413: problem('Body larger than API_BODY_LIMIT'),
        415: problem('Body not sent as application/json'),
        500: problem('Unexpected failure'),
        503: problem('Replay check unavailable'),
      },
    },
  };
}

/**
 * The edge agents' endpoints as an api plugin: mounted by main.ts, documented in
 * /v1/openapi.json. Its settings come from the environment (edge-config.ts), read once here.
 */
export function edgePlugin(env: NodeJS.ProcessEnv = process.env): ApiPlugin {
  const config = loadEdgeConfig(env);
  return {
    name: 'edge',
    mount(app, ctx) {
      app.use(createEdgeRouter(createEdgeDeps({ pool: ctx.pool, redis: ctx.redis, prefix: ctx.config.QUEUE_PREFIX, logger: ctx.logger, box: ctx.box, draining: ctx.draining }, config)));
    },
    openApiPaths: {
      '/v1/edge/clusters/{cid}/work': operation(
        'edge.work',
        'Lease due deliveries to an edge agent (long-poll)',
        'Answers as soon as deliveries of the cluster are due (up to max), else after wait_seconds with none; at once with none while the service drains. Each is leased to this request (lease_owner) until lease_until; a lease that expires unreported is handed out again. What a request leased but could not hand out (its caller left, the service began draining, the response was cut) is given back at once, with no attempt. Deliveries of a destination whose circuit breaker is open (one probe once its cooldown is over) or whose rate_limit_per_second is spent for the current second are not handed out: given back with no attempt, due again when they may go. max 0 is a heartbeat.',
        workRequestSchema,
        workResponseSchema,
      ),
      '/v1/edge/clusters/{cid}/reports': operation(
        'edge.reports',
        'Report attempts made by an edge agent',
        'Recorded exactly like direct attempts (retries, backoff, DLQ, event statuses), and fed into the destination\'s circuit breaker like them. Idempotent: a report whose lease no longer holds the delivery (repeated, or re-leased) is ignored.',
        reportRequestSchema,
        reportResponseSchema,
      ),
      '/v1/edge/clusters/{cid}/releases': operation(
        'edge.releases',
        'Give back leases an edge agent did not use',
        'For deliveries leased to the agent and not sent, or whose send was abandoned before any answer (the agent stops): each lease is dropped only while it still holds a delivery of this cluster and was taken by this agent_id; the delivery can then be leased again at once. No attempt is recorded and the attempt count is unchanged. Answered per item, in order: released, or ignored (not_leased) when that lease no longer holds the delivery, which changes nothing. A delivery that was sent must be reported instead.',
        releaseRequestSchema,
        releaseResponseSchema,
      ),
    },
  };
}
