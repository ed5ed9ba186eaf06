import type { Request, Response } from 'express';
import { AppError } from '@hookline/errors';
import { verifyClusterRequest } from '../auth/cluster-signature';
import { authenticate } from '../auth/authenticate';
import { startAudit } from '../audit/audit-write';
import { actorOf, type AppContext, type Principal, type Reply, type RequestContext } from '../context';
import { requestHash, runIdempotent, startIdempotent, validIdempotencyKey } from '../limits/idempotency';
import { enforceRateLimit } from '../limits/rate-limit';
import { assertJsonBody } from './json-body';
import { isWrite, problemReply, replayedBody, type AuthedRoute, type EndAudit, type RoutePipeline } from './route';
import { assertValid } from './validate';

function rateLimit(app: AppContext, principal: Principal, res: Response): Promise<void> {
  return enforceRateLimit({ redis: app.redis, logger: app.logger, prefix: app.config.QUEUE_PREFIX }, principal.tenantId, app.config.rateLimits[principal.plan], res);
}

function idFromBody(body: unknown): string | undefined {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Fail-closed audit of a write (audit/audit-write.ts, startAudit, as the MCP writes): the row
 * (action, the resource the path names, path parameters and body redacted) is inserted before
 * the tenant, scope, body and Idempotency-Key checks and the handler; when it cannot be, this
 * throws (500) and nothing runs. The end (outcome; the id a create made, from its answer) is
 * recorded when the route's code has returned or thrown (route.ts), not when the answer
 * reaches the client. A failure to record it is logged and leaves the row's outcome
 * UNFINISHED_OUTCOME (server_error, status null): the write may have been applied.
 */
async function audit(app: AppContext, route: AuthedRoute, ctx: RequestContext): Promise<EndAudit> {
  const finish = await startAudit(app.pool, {
    tenantId: ctx.tenantId,
    actor: actorOf(ctx.principal),
    action: route.operationId,
    resourceId: Object.entries(ctx.params).find(([k]) => k !== 'tid')?.[1] ?? null,
    params: { path: ctx.params, body: ctx.body ?? null },
    requestId: ctx.requestId,
  });
  return async (status, reply) => {
    const created = idFromBody(reply?.body);
    await finish(status, created === undefined ? {} : { resourceId: created }).catch((err: Error) =>
      ctx.logger.error('audit outcome write failed; the row keeps the unfinished outcome', { action: route.operationId, status, err: err.message }),
    );
  };
}

/**
 * Validates the body, applies Idempotency-Key, runs the handler. With a key, the handler runs
 * under its claim (limits/idempotency.ts, runIdempotent): its outcome, a 5xx included, is the
 * key's from the moment it starts.
 */
async function execute(app: AppContext, route: AuthedRoute, ctx: RequestContext, req: Request): Promise<Reply> {
  if (route.body) {
    assertJsonBody(req);
    assertValid(route.body, ctx.body ?? null);
  }
  const header = req.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  const res = req.res!;
  if (!isWrite(route.method) || key === undefined) return route.handler(ctx);
  if (!validIdempotencyKey(key)) throw AppError.validation([{ field: 'Idempotency-Key', message: 'must be 1-255 printable ASCII characters' }]);
  // Per tenant and per credential (limits/idempotency.ts): another credential's identical
  // request runs on its own, never answered with this one's stored (possibly secret) body.
  const actor = actorOf(ctx.principal);
  const started = await startIdempotent(app, ctx.tenantId, actor, key, requestHash(route.method, req.path, ctx.body ?? null));
  if (started.kind === 'replay') {
    res.setHeader('Idempotent-Replayed', 'true');
    return { status: started.status, body: replayedBody(started.status, started.body, ctx.requestId) };
  }
  return runIdempotent(app, started, () => route.handler(ctx), (err) => problemReply(err, ctx.requestId));
}

async function authenticateRoute(app: AppContext, req: Request, route: AuthedRoute): Promise<Principal> {
  if (route.auth === 'cluster') return verifyClusterRequest(app, req);
  return authenticate(app, req.headers);
}

export const pipeline: RoutePipeline = { authenticate: authenticateRoute, rateLimit, audit, execute };
