import express, { type Request, type Response, type Router } from 'express';
import * as z from 'zod';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AppError } from '@hookline/errors';
import { authenticateMcp, requireScope } from './mcp-auth';
import { endpointsReply, findTool, runTool } from './mcp-catalog';
import type { McpContext, McpDeps } from './mcp-deps';
import { ensureRequestId, mcpErrorHandler, param, parseOr400, requestIdOf } from './mcp-http';
import { mcpKeyRoutes } from './mcp-keys.routes';
import { logsFor } from './mcp-logs';
import { deliveryStatus, health, planes } from './mcp-queries';
import { buildMcpServer } from './mcp-server';
import { evidenceReply } from './tools/evidence-tools';

const logsQuery = z.object({ level: z.enum(['info', 'warn', 'error']).optional(), limit: z.coerce.number().int().min(1).max(100).optional() });

/**
 * The MCP surface: the Streamable HTTP endpoint `POST /v1/mcp` (stateless, one server per
 * request, JSON responses), the REST mirror under `/v1/mcp/…`, `POST /v1/mcp/tools/{name}`,
 * and MCP key management under `/v1/tenants/{tid}/mcp-keys`. Mount it before the app's
 * 404 handler; it answers its own errors as problem details.
 */
export function createMcpRouter(deps: McpDeps): Router {
  const router = express.Router();
  const json = express.json({ limit: '1mb' });
  router.use(['/v1/mcp', '/v1/tenants/:tid/mcp-keys'], ensureRequestId);

  const context = async (req: Request, res: Response): Promise<McpContext> => ({ deps, principal: await authenticateMcp(deps, req.headers), requestId: requestIdOf(res) });
  /** A REST mirror route: MCP key, its scope, then the shared query. */
  const mirror = (path: string, scope: string, reply: (ctx: McpContext, req: Request) => Promise<unknown> | unknown): void => {
    router.get(path, async (req, res) => {
      const ctx = await context(req, res);
      requireScope(ctx.principal.scopes, scope);
      res.json(await reply(ctx, req));
    });
  };

  router.post('/v1/mcp', json, async (req, res) => {
    const ctx = await context(req, res);
    const server = buildMcpServer(ctx, deps.build.version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
  router.all('/v1/mcp', (_req, res) => {
    res.setHeader('Allow', 'POST');
    throw new AppError('method-not-allowed', 'The MCP endpoint is stateless: POST JSON-RPC messages; there is no SSE stream or session.');
  });

  mirror('/v1/mcp/health', 'mcp:read:health', (ctx) => health(ctx.deps));
  mirror('/v1/mcp/endpoints', 'mcp:read:endpoints', (ctx) => endpointsReply(ctx));
  mirror('/v1/mcp/evidence/:id', 'mcp:read:evidence', (ctx, req) => evidenceReply(ctx, param(req, 'id')));
  mirror('/v1/mcp/deliveries/:id/status', 'mcp:read:deliveries', (ctx, req) => deliveryStatus(ctx.deps, ctx.principal.tenantId, param(req, 'id')));
  mirror('/v1/mcp/planes', 'mcp:read:planes', (ctx) => planes(ctx.deps, ctx.principal.tenantId));
  mirror('/v1/mcp/logs/:id', 'mcp:read:logs', (ctx, req) => logsFor(ctx.deps, ctx.principal.tenantId, param(req, 'id'), parseOr400(logsQuery, req.query)));

  router.post('/v1/mcp/tools/:name', json, async (req, res) => {
    const ctx = await context(req, res);
    const tool = findTool(param(req, 'name'));
    if (!tool) throw new AppError('not-found', `There is no MCP tool named ${param(req, 'name')}.`);
    res.json(await runTool(ctx, tool, parseOr400(z.object(tool.input).strict(), req.body)));
  });

  mcpKeyRoutes(router, deps, json);
  router.use(['/v1/mcp', '/v1/tenants/:tid/mcp-keys'], mcpErrorHandler(deps.logger));
  return router;
}
