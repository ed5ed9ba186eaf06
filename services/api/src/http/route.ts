import type { Request, Response, Router } from 'express';
import { AppError } from '@hookline/errors';
import type { AppContext, Principal, Reply, RequestContext } from '../context';
import { apiProblem, errorStatus } from './api-problem';
import { clientAddress } from './client-address';
import { assertJsonBody } from './json-body';
import { assertStorableRequest } from './storable-request';
import { assertValid, type JsonSchema } from './validate';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Query parameters documented in OpenAPI (their schemas live in openapi/components.ts).
 * `lifecycle_status` is the config lists' `status` (an alias of `state`), documented as `status`.
 */
export type QueryParam = 'limit' | 'cursor' | 'offset' | 'status' | 'event_id' | 'destination_id' | 'source_id' | 'delivery_id' | 'level' | 'since' | 'until' | 'state' | 'lifecycle_status' | 'correlation_id' | 'action';

export interface RouteDoc {
  summary: string;
  tag: string;
  description?: string;
  /** Success status (default 200 for GET, 201 for POST, 200 otherwise). */
  status?: number;
  /** JSON Schema of the success body; null when there is none (204). */
  response: JsonSchema | null;
  query?: readonly QueryParam[];
  /** Extra error statuses beyond those implied by auth, scope, body and idempotency. */
  errors?: readonly number[];
}

interface BaseRoute {
  method: Method;
  /** express path syntax (`:param`); OpenAPI gets `{param}`. */
  path: string;
  /** Stable name, also the audit `action` (e.g. `ingesters.create`). */
  operationId: string;
  doc: RouteDoc;
  body?: JsonSchema;
}

/** A route anyone may call (health, OpenAPI, login). */
export interface PublicRoute extends BaseRoute {
  auth: 'none';
  handler(ctx: Omit<RequestContext, 'principal' | 'tenantId'>): Promise<Reply>;
}

/**
 * A route that needs a credential. `tenant: 'path'` means `{tid}` must be the caller's
 * tenant (else 404, never revealing that it exists); `'flat'` takes `X-Tenant-ID` or the
 * credential's tenant. `auth: 'cluster'` routes take an HMAC-signed cluster request.
 */
export interface AuthedRoute extends BaseRoute {
  auth: 'credential' | 'cluster';
  tenant: 'path' | 'flat';
  scope?: string;
  /** Writes are audited unless this is false (e.g. heartbeats). */
  audit?: false;
  handler(ctx: RequestContext): Promise<Reply>;
}

export type RouteDef = PublicRoute | AuthedRoute;

export function isWrite(method: Method): boolean {
  return method !== 'get';
}

/** Records how an audited write ended; never throws (a failure is logged and leaves the row unfinished). */
export type EndAudit = (status: number, reply?: Reply) => Promise<void>;

/** Hooks the pipeline runs around a credentialed route (app.ts wires the real ones). */
export interface RoutePipeline {
  authenticate(app: AppContext, req: Request, route: AuthedRoute): Promise<Principal>;
  rateLimit(app: AppContext, principal: Principal, res: Response): Promise<void>;
  /**
   * Writes an audited write's row before anything of it runs (fail closed: when the row
   * cannot be written this throws and nothing runs); what it returns records the end.
   */
  audit(app: AppContext, route: AuthedRoute, ctx: RequestContext): Promise<EndAudit>;
  execute(app: AppContext, route: AuthedRoute, ctx: RequestContext, req: Request): Promise<Reply>;
}

function baseContext(app: AppContext, req: Request, res: Response): Omit<RequestContext, 'principal' | 'tenantId'> {
  const requestId = String(res.locals['requestId']);
  return {
    app,
    requestId,
    clientAddress: clientAddress(req),
    params: req.params as Record<string, string>,
    query: req.query as Record<string, unknown>,
    body: req.body as unknown,
    headers: req.headers,
    logger: app.logger.child({ request_id: requestId }),
  };
}

function resolveTenant(route: AuthedRoute, principal: Principal, req: Request): string {
  if (route.tenant === 'path') {
    if (req.params['tid'] !== principal.tenantId) throw AppError.notFound('tenant');
    return principal.tenantId;
  }
  const header = req.headers['x-tenant-id'];
  const asked = Array.isArray(header) ? header[0] : header;
  if (asked && asked !== principal.tenantId) throw AppError.notFound('tenant');
  return principal.tenantId;
}

export function send(res: Response, reply: Reply): void {
  res.status(reply.status);
  if (reply.headers) res.set(reply.headers);
  if (reply.body === undefined) res.end();
  else if (reply.status >= 400) res.type('application/problem+json').json(reply.body);
  else res.json(reply.body);
}

/** The problem body an error becomes (what an idempotent replay must return too). */
export function problemReply(err: unknown, requestId: string): Reply {
  const { problem, headers } = apiProblem(err, requestId);
  return { status: problem.status, body: problem, headers };
}

/**
 * The body of an idempotent replay. A stored problem body names the request that produced
 * it in `instance`; replayed, it names this one (the X-Request-Id of this response, which is
 * what a caller quotes to support), the rest unchanged. Success bodies are replayed as stored.
 */
export function replayedBody(status: number, body: unknown, requestId: string): unknown {
  if (status < 400 || body === null || typeof body !== 'object' || Array.isArray(body) || !('instance' in body)) return body;
  return { ...body, instance: requestId };
}

export function mountRoutes(router: Router, app: AppContext, routes: readonly RouteDef[], pipeline: RoutePipeline): void {
  for (const route of routes) {
    router[route.method](route.path, async (req: Request, res: Response) => {
      assertStorableRequest(req);
      const base = baseContext(app, req, res);
      if (route.auth === 'none') {
        if (route.body) {
          assertJsonBody(req);
          assertValid(route.body, base.body ?? null);
        }
        send(res, await route.handler(base));
        return;
      }
      const principal = await pipeline.authenticate(app, req, route);
      await pipeline.rateLimit(app, principal, res);
      const ctx: RequestContext = { ...base, principal, tenantId: principal.tenantId };
      // A write's audit row is there before anything of it runs, refusals included (reads
      // are not audited). Its end is recorded once the route's code has returned or thrown,
      // before the answer is sent: a client that went away still gets its outcome recorded.
      const endAudit = isWrite(route.method) && route.audit !== false ? await pipeline.audit(app, route, ctx) : null;
      let reply: Reply;
      try {
        ctx.tenantId = resolveTenant(route, principal, req);
        if (route.scope && !principal.scopes.has(route.scope)) {
          throw new AppError('insufficient-scope', `This credential lacks the scope ${route.scope}.`, { required_scope: route.scope });
        }
        reply = await pipeline.execute(app, route, ctx, req);
      } catch (err) {
        await endAudit?.(errorStatus(err));
        throw err;
      }
      await endAudit?.(reply.status, reply);
      send(res, reply);
    });
  }
}
