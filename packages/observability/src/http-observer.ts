import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@hookline/logger';
import type { Metrics } from './metrics';
import type { Span, Tracer } from './tracer';

export interface HttpObservation {
  /** The route pattern (`/in/{ingester_id}`), never the raw path: it labels the metrics. Set it once known. */
  route: string;
  /** Extra log fields of the request (ids only: event, ingester, tenant…). */
  fields: Record<string, unknown>;
  span: Span;
}

export interface HttpObserverDeps {
  metrics: Metrics;
  logger: Logger;
  tracer: Tracer;
  /** Level of the line of a 1xx–3xx answer (4xx is `info`, 5xx `warn`; probes and scrapes `debug`). */
  successLevel?: 'debug' | 'info';
}

// Probes and scrapes: counted like any request, but logged at debug (every few seconds per pod).
const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Route labels a process takes at most; a new one past them is counted as `other`. Route
 * patterns are few, so this never bites unless something labels by raw values: then it
 * bounds the series instead of letting them grow with every id.
 */
export const MAX_ROUTE_LABELS = 200;
const routeLabels = new WeakMap<Metrics, Set<string>>();

function routeLabel(metrics: Metrics, route: string): string {
  let seen = routeLabels.get(metrics);
  if (!seen) routeLabels.set(metrics, (seen = new Set()));
  if (seen.has(route)) return route;
  if (seen.size >= MAX_ROUTE_LABELS) return 'other';
  seen.add(route);
  return route;
}

/**
 * Observes one request until its response is finished (or the socket closes): counts it,
 * times it, ends its span and writes one log line with the request and trace ids. Never
 * logs headers or bodies. The caller sets `route` (and `fields`) while the request runs.
 */
export function observeHttp(deps: HttpObserverDeps, req: IncomingMessage, res: ServerResponse, route = 'unmatched'): HttpObservation {
  const started = performance.now();
  const method = req.method ?? 'GET';
  const span = deps.tracer.start(`${method} ${route}`, 'server', req.headers['traceparent']);
  const obs: HttpObservation = { route, fields: {}, span };
  const done = (): void => {
    const seconds = (performance.now() - started) / 1000;
    const status = res.headersSent ? res.statusCode : 499; // 499: the client went away first
    const labels = { method, route: routeLabel(deps.metrics, obs.route), status: String(status) };
    deps.metrics.httpDuration.observe(labels, seconds); // hookline_http_requests_total is derived from it
    span.end({ 'http.request.method': method, 'http.route': obs.route, 'http.response.status_code': status }, status >= 500 ? `HTTP ${status}` : undefined, `${method} ${obs.route}`);
    const level = status >= 500 ? 'warn' : status >= 400 ? 'info' : QUIET.has(obs.route) ? 'debug' : (deps.successLevel ?? 'info');
    if (!deps.logger.isLevelEnabled(level)) return;
    const requestId = res.getHeader('x-request-id');
    deps.logger.log(level, 'request', {
      method,
      route: obs.route,
      status,
      duration_ms: Math.round(seconds * 10_000) / 10,
      request_id: typeof requestId === 'string' ? requestId : undefined,
      trace_id: span.context.traceId,
      ...obs.fields,
    });
  };
  // 'close' follows 'finish', and also comes alone when the client goes away first.
  res.once('close', done);
  return obs;
}

type ExpressLike = IncomingMessage & { baseUrl?: string };

/**
 * The same for express: the route pattern is express's matched route (`req.route.path`
 * under `req.baseUrl`), or `unmatched` for 404s, so raw paths never become labels. It is
 * taken when express dispatches to the route: by the time the answer is finished an error
 * handler mounted on a path with parameters (`/v1/tenants/:tid/mcp-keys`) may have set
 * `req.baseUrl` to that path with the request's values in it, a tenant id in a label.
 */
export function httpObserverMiddleware(deps: HttpObserverDeps): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  return (req, res, next) => {
    const obs = observeHttp(deps, req, res);
    let route: unknown;
    Object.defineProperty(req, 'route', {
      configurable: true,
      enumerable: true,
      get: () => route,
      set(value: unknown) {
        route = value;
        const path = (value as { path?: unknown } | undefined)?.path;
        if (typeof path === 'string') obs.route = `${(req as ExpressLike).baseUrl ?? ''}${path}`;
      },
    });
    next();
  };
}
