import type { Request, Response } from 'express';
import { AppError } from '@hookline/errors';
import { verifyClusterRequest } from '../auth/cluster-signature';
import { authenticate } from '../auth/authenticate';
import { recordAudit } from '../audit/audit-log';
import { actorOf, type AppContext, type Principal, type Reply, type RequestContext } from '../context';
import { finishIdempotent, requestHash, startIdempotent, validIdempotencyKey } from '../limits/idempotency';
import { enforceRateLimit } from '../limits/rate-limit';
import { assertJsonBody } from './json-body';
import { isWrite, problemReply, replayedBody, type AuthedRoute, type RoutePipeline } from './route';
import { assertValid } from './validate';

function rateLimit(app: AppContext, principal: Principal, res: Response): Promise<void> {
  return enforceRateLimit({ redis: app.redis, logger: app.logger, prefix: app.config.QUEUE_PREFIX }, principal.tenantId, app.config.rateLimits[principal.plan], res);
}

function audit(app: AppContext, route: AuthedRoute, ctx: RequestContext, res: Response): void {
  res.on('finish', () => {
    const resourceId = (res.locals['resourceId'] as string | undefined) ?? Object.entries(ctx.params).find(([k]) => k !== 'tid')?.[1] ?? null;
    recordAudit(app, {
      tenantId: ctx.tenantId,
      actor: actorOf(ctx.principal),
      action: route.operationId,
      resourceId,
      params: { path: ctx.params, body: ctx.body ?? null },
      status: res.statusCode,
      requestId: ctx.requestId,
    }).catch((err: Error) => ctx.logger.error('audit write failed', { action: route.operationId, err: err.message }));
  });
}

function idFromBody(body: unknown): string | undefined {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}

/** Validates the body, applies Idempotency-Key, runs the handler. */
async function execute(app: AppContext, route: AuthedRoute, ctx: RequestContext, req: Request): Promise<Reply> {
  if (route.body) {
    assertJsonBody(req);
    assertValid(route.body, ctx.body ?? null);
  }
  const header = req.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  const res = req.res!;
  if (!isWrite(route.method) || key === undefined) {
    const reply = await route.handler(ctx);
    res.locals['resourceId'] ??= idFromBody(reply.body);
    return reply;
  }
  if (!validIdempotencyKey(key)) throw AppError.validation([{ field: 'Idempotency-Key', message: 'must be 1-255 printable ASCII characters' }]);
  // Per tenant and per credential (limits/idempotency.ts): another credential's identical
  // request runs on its own, never answered with this one's stored (possibly secret) body.
  const actor = actorOf(ctx.principal);
  const started = await startIdempotent(app, ctx.tenantId, actor, key, requestHash(route.method, req.path, ctx.body ?? null));
  if (started.kind === 'replay') {
    res.setHeader('Idempotent-Replayed', 'true');
    return { status: started.status, body: replayedBody(started.status, started.body, ctx.requestId) };
  }
  let reply: Reply;
  try {
    reply = await route.handler(ctx);
  } catch (err) {
    const failed = problemReply(err, ctx.requestId);
    await finishIdempotent(app, started, failed.status, failed.body);
    throw err;
  }
  res.locals['resourceId'] ??= idFromBody(reply.body);
  await finishIdempotent(app, started, reply.status, reply.body);
  return reply;
}

async function authenticateRoute(app: AppContext, req: Request, route: AuthedRoute): Promise<Principal> {
  if (route.auth === 'cluster') return verifyClusterRequest(app, req);
  return authenticate(app, req.headers);
}

export const pipeline: RoutePipeline = { authenticate: authenticateRoute, rateLimit, audit, execute };
