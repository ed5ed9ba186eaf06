import express, { type Request, type Response, type Router } from 'express';
import * as z from 'zod';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AppError, toProblem } from '@hookline/errors';
import { authenticateMcp, requireScope } from './mcp-auth';
import { endpointsReply, findTool, runTool } from './mcp-catalog';
import type { McpContext, McpDeps } from './mcp-deps';
import { assertJsonBody } from '../http/json-body';
import { ensureRequestId, mcpErrorHandler, param, parseOr400, requestIdOf, storableRequest, transportErrorsAsProblems } from './mcp-http';
import { mcpKeyRoutes } from './mcp-keys.routes';
import { LOG_RESOURCE_ID, logsFor } from './mcp-logs';
import { deliveryStatus, health, planes } from './mcp-queries';
import { rateLimitMcp, toolCallCount } from './mcp-rate-limit';
import { buildMcpServer, refusedMessages } from './mcp-server';
import { evidenceCursor, evidenceReply } from './tools/evidence-tools';
import { planesCursor } from './tools/operations-tools';
import { idOf } from './tools/tool-def';

const pageLimit = z.coerce.number().int().min(1).max(100).optional();
const logsQuery = z.object({ level: z.enum(['info', 'warn', 'error']).optional(), limit: pageLimit });
const evidenceQuery = z.object({ limit: pageLimit, cursor: evidenceCursor });
const planesQuery = z.object({ limit: pageLimit, cursor: planesCursor });
const DELIVERY_ID = idOf('dlv');
const LOG_ID = z.string().regex(LOG_RESOURCE_ID);

/**
 * The `{id}` of a mirror route, when it has the shape the tool takes; any other names nothing
 * of the tenant: 404, as the control API answers an id it does not know, without a query.
 */
function pathId(req: Request, shape: z.ZodType<string>, what: string): string {
  const id = param(req, 'id');
  if (!shape.safeParse(id).success) throw AppError.notFound(what);
  return id;
}

/**
 * The MCP surface: the Streamable HTTP endpoint `POST /v1/mcp` (stateless, one server per
 * request, JSON responses), the REST mirror under `/v1/mcp/…`, `POST /v1/mcp/tools/{name}`,
 * and MCP key management under `/v1/tenants/{tid}/mcp-keys`. Mount it before the app's
 * 404 handler; it answers its own errors as problem details, the MCP transport's refusals
 * (406 Accept, 415 Content-Type, 400 malformed JSON-RPC, …) included. Before anything else,
 * every route refuses what PostgreSQL cannot store (a NUL in the path, the query or the body:
 * 400, before authentication, as the control API's routes do). Every route is rate-limited per
 * tenant as the control API is and, when called with an MCP key, per key too
 * (mcp-rate-limit.ts), right after authentication.
 */
export function createMcpRouter(deps: McpDeps): Router {
  const router = express.Router();
  const json = express.json({ limit: '1mb' });
  // Before every route and any credential lookup: the request id, the body parsed (the api's
  // parser has done it already), then what PostgreSQL cannot store refused (400).
  router.use(['/v1/mcp', '/v1/tenants/:tid/mcp-keys'], ensureRequestId, json, storableRequest);

  /** The MCP key, then `cost` tokens of its own rate limit and of its tenant's (429). */
  const context = async (req: Request, res: Response, cost = 1): Promise<McpContext> => {
    const principal = await authenticateMcp(deps, req.headers);
    await rateLimitMcp(deps, principal, principal, res, cost);
    return { deps, principal, requestId: requestIdOf(res) };
  };
  /** A REST mirror route: MCP key, its scope, then the shared query. */
  const mirror = (path: string, scope: string, reply: (ctx: McpContext, req: Request) => Promise<unknown> | unknown): void => {
    router.get(path, async (req, res) => {
      const ctx = await context(req, res);
      requireScope(ctx.principal.scopes, scope);
      res.json(await reply(ctx, req));
    });
  };

  router.post('/v1/mcp', json, async (req, res) => {
    let ctx: McpContext;
    try {
      // One token per request, or per tool call when a batch carries several.
      ctx = await context(req, res, Math.max(1, toolCallCount(req.body)));
    } catch (err) {
      if (!(err instanceof AppError) || err.type !== 'rate-limit-exceeded') throw err;
      // An HTTP 429 as the control API answers it, its body the JSON-RPC answer an MCP client reads.
      const { problem, headers } = toProblem(err, requestIdOf(res));
      res.status(problem.status).set(headers).json(refusedMessages(req.body, problem));
      return;
    }
    const server = buildMcpServer(ctx, deps.build.version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // The transport's own refusals (Accept, Content-Type, malformed JSON-RPC, …) as problem
    // details with the request id, as every other error here (mcp-http.ts).
    const restore = transportErrorsAsProblems(res);
    try {
      await transport.handleRequest(req, res, req.body);
    } finally {
      restore();
    }
  });
  // Stateless: no server-initiated stream (GET) and no session to end (DELETE). In the api
  // the app's 405 (and OPTIONS) answers first; this keeps the router whole on its own, with
  // the same Allow (and served as documented).
  router.all('/v1/mcp', (req, res) => {
    res.setHeader('Allow', 'POST, OPTIONS');
    if (req.method === 'OPTIONS') return void res.status(204).end();
    throw new AppError('method-not-allowed', 'The MCP endpoint is stateless: POST JSON-RPC messages; there is no SSE stream or session.');
  });

  mirror('/v1/mcp/health', 'mcp:read:health', (ctx) => health(ctx.deps));
  mirror('/v1/mcp/endpoints', 'mcp:read:endpoints', (ctx) => endpointsReply(ctx));
  mirror('/v1/mcp/evidence/:id', 'mcp:read:evidence', (ctx, req) => evidenceReply(ctx, param(req, 'id'), parseOr400(evidenceQuery, req.query)));
  mirror('/v1/mcp/deliveries/:id/status', 'mcp:read:deliveries', (ctx, req) => deliveryStatus(ctx.deps, ctx.principal.tenantId, pathId(req, DELIVERY_ID, 'delivery')));
  mirror('/v1/mcp/planes', 'mcp:read:planes', (ctx, req) => planes(ctx.deps, ctx.principal.tenantId, parseOr400(planesQuery, req.query)));
  mirror('/v1/mcp/logs/:id', 'mcp:read:logs', (ctx, req) => {
    const query = parseOr400(logsQuery, req.query);
    return logsFor(ctx.deps, ctx.principal.tenantId, pathId(req, LOG_ID, 'resource'), query);
  });

  router.post('/v1/mcp/tools/:name', json, async (req, res) => {
    const ctx = await context(req, res);
    assertJsonBody(req);
    const tool = findTool(param(req, 'name'));
    if (!tool) throw new AppError('not-found', `There is no MCP tool named ${param(req, 'name')}.`);
    res.json(await runTool(ctx, tool, req.body, { strict: true }));
  });

  mcpKeyRoutes(router, deps, json);
  router.use(['/v1/mcp', '/v1/tenants/:tid/mcp-keys'], mcpErrorHandler(deps.logger));
  return router;
}
