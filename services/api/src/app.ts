import { setMaxListeners } from 'node:events';
import express, { type Express, type Request } from 'express';
import { setErrorsBase } from '@hookline/errors';
import { createSecretBox } from '@hookline/signing';
import type { ApiDeps, AppContext } from './context';
import { errorMiddleware, notFoundMiddleware } from './http/error.middleware';
import { JSON_MEDIA_TYPE } from './http/json-body';
import { methodNotAllowed } from './http/method-not-allowed';
import { pipeline } from './http/pipeline';
import { requestIdMiddleware } from './http/request-id.middleware';
import { mountRoutes, type RouteDef } from './http/route';
import { buildOpenApi, type ExtraPaths } from './openapi/build-openapi';
import { allRoutes } from './routes';

/**
 * Something mounted beside the route list (e.g. the MCP surface): it gets the express app
 * before the 404 handler, and documents its paths so /v1/openapi.json stays complete.
 */
export interface ApiPlugin {
  name: string;
  mount(app: Express, context: AppContext): void;
  openApiPaths?: ExtraPaths;
}

export interface ApiApp {
  app: Express;
  context: AppContext;
  routes: readonly RouteDef[];
  /** The document served at /v1/openapi.json. */
  openApi(): Record<string, unknown>;
  /** After SIGTERM: /readyz answers 503 so load balancers stop sending traffic, and edge long-polls return empty. */
  setDraining(): void;
}

async function readiness(ctx: AppContext): Promise<Record<string, boolean>> {
  const [database, redis] = await Promise.all([
    ctx.pool.query('SELECT 1').then(() => true, () => false),
    ctx.redis.ping().then(() => true, () => false),
  ]);
  return { database, redis };
}

/** Builds the control API from its deps (no listening, no env): tests run it in-process. */
export function buildApp(deps: ApiDeps, plugins: readonly ApiPlugin[] = []): ApiApp {
  setErrorsBase(deps.config.ERRORS_BASE_URL);
  const drain = new AbortController();
  // Every waiting edge long-poll listens on it: many at once are expected, not a leak.
  setMaxListeners(0, drain.signal);
  const context: AppContext = { ...deps, box: createSecretBox(deps.config.SECRETS_KEY), draining: drain.signal };
  const app = express();
  app.disable('x-powered-by');
  // Who the client is (req.ip): only TRUSTED_PROXIES may name it in X-Forwarded-For.
  app.set('trust proxy', deps.config.trustedProxies.length ? [...deps.config.trustedProxies] : false);
  app.use(requestIdMiddleware);
  const extraPaths: ExtraPaths = Object.assign({}, ...plugins.map((p) => p.openApiPaths ?? {}));
  const routes = allRoutes(extraPaths);
  const openApi = (): Record<string, unknown> => buildOpenApi(routes, extraPaths);
  // The document lists every path and method served (a test holds it to that), so it also
  // says what a known path allows. Before the body parser: a wrong method is 405, and OPTIONS
  // 204 with Allow, whatever the body (malformed JSON included) and before any credential.
  app.use(methodNotAllowed(openApi()['paths'] as Record<string, Record<string, unknown>>));
  app.use(
    express.json({
      type: JSON_MEDIA_TYPE,
      limit: deps.config.API_BODY_LIMIT,
      // HMAC-signed cluster requests are verified over the exact bytes.
      verify: (req, _res, buf) => {
        (req as Request & { rawBody?: Buffer }).rawBody = buf;
      },
    }),
  );
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const checks = await readiness(context);
    const draining = drain.signal.aborted;
    const ready = !draining && Object.values(checks).every(Boolean);
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', draining, checks });
  });
  const router = express.Router();
  mountRoutes(router, context, routes, pipeline);
  app.use(router);
  for (const plugin of plugins) plugin.mount(app, context);
  app.use(notFoundMiddleware);
  app.use(errorMiddleware(deps.logger));
  return { app, context, routes, openApi, setDraining: () => drain.abort() };
}
