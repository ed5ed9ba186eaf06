import type { Request, RequestHandler, Response, Router } from 'express';
import { AppError } from '@hookline/errors';
import { authenticateApiKeyOnly, authenticateMcp, requireScope } from './mcp-auth';
import { auditMcp } from './mcp-audit';
import type { ApiCaller, McpDeps } from './mcp-deps';
import { assertJsonBody } from '../http/json-body';
import { param, parseOr400, requestIdOf } from './mcp-http';
import { rateLimitMcp } from './mcp-rate-limit';
import { createKeyBody, createMcpKey, DEFAULT_MCP_SCOPES, listMcpKeys, parseGroup, revokeMcpKey, setToolGroup } from './mcp-keys';

const BASE = '/v1/tenants/:tid/mcp-keys';

interface KeyAdmin extends ApiCaller {
  viaMcp: boolean;
}

/**
 * Who is calling: an MCP key (X-MCP-API-Key) or a control-API credential; then its tenant's
 * rate limit, as on every control-API route, and an MCP key's own (429, not audited there
 * either).
 */
async function identify(deps: McpDeps, req: Request, res: Response): Promise<KeyAdmin> {
  if (req.headers['x-mcp-api-key'] !== undefined) {
    const p = await authenticateMcp(deps, req.headers);
    const admin: KeyAdmin = { kind: 'mcp_key', id: p.keyId, tenantId: p.tenantId, plan: p.plan, scopes: p.scopes, viaMcp: true };
    await rateLimitMcp(deps, admin, p, res);
    return admin;
  }
  const admin: KeyAdmin = { ...(await (deps.authenticateApiCaller ?? ((h) => authenticateApiKeyOnly(deps, h)))(req.headers)), viaMcp: false };
  await rateLimitMcp(deps, admin, null, res);
  return admin;
}

/**
 * Who may manage MCP keys: a control-API credential (`read:api-keys` to list,
 * `write:api-keys` to change), or an MCP key holding `mcp:admin:keys`. Enabling a write
 * group is the one elevation an MCP key can never do, not even for another key.
 */
function authorize(admin: KeyAdmin, req: Request, need: 'read' | 'write' | 'elevate'): void {
  if (admin.viaMcp) requireScope(admin.scopes, need === 'elevate' ? 'write:api-keys' : 'mcp:admin:keys');
  else requireScope(admin.scopes, need === 'read' ? 'read:api-keys' : 'write:api-keys');
  if (param(req, 'tid') !== admin.tenantId) throw AppError.notFound('tenant');
}

type Action = (admin: KeyAdmin, req: Request) => Promise<{ status: number; body: unknown; resourceId: string | null; params?: Record<string, unknown> }>;

/** A key-management write: run and audited, refusals included, once the caller is known. */
function write(deps: McpDeps, action: string, need: 'write' | 'elevate', run: Action): RequestHandler {
  return async (req: Request, res: Response) => {
    const admin = await identify(deps, req, res);
    const audit = (status: number, resourceId: string | null, params: Record<string, unknown>) =>
      auditMcp(deps.pool, { tenantId: admin.tenantId, actor: `${admin.kind}:${admin.id}`, action, resourceId, params, status, requestId: requestIdOf(res) });
    try {
      authorize(admin, req, need);
      const out = await run(admin, req);
      await audit(out.status, out.resourceId, out.params ?? {});
      res.status(out.status).json(out.body);
    } catch (err) {
      await audit(err instanceof AppError ? err.status : 500, req.params['kid'] ? param(req, 'kid') : null, { path: req.path }).catch(() => undefined);
      throw err;
    }
  };
}

export function mcpKeyRoutes(router: Router, deps: McpDeps, json: RequestHandler): void {
  router.get(BASE, async (req, res) => {
    const admin = await identify(deps, req, res);
    authorize(admin, req, 'read');
    res.json({ mcp_keys: await listMcpKeys(deps, admin.tenantId) });
  });
  router.post(BASE, json, write(deps, 'mcp_keys.create', 'write', async (admin, req) => {
    assertJsonBody(req);
    const body = parseOr400(createKeyBody, req.body);
    // An MCP administrator hands out only scopes it holds itself, the default scopes included.
    const beyond = admin.viaMcp ? (body.scopes ?? DEFAULT_MCP_SCOPES).find((s) => !admin.scopes.has(s)) : undefined;
    if (beyond) throw new AppError('insufficient-scope', `A key cannot be given ${beyond}, which this credential lacks.`, { required_scope: beyond });
    const key = await createMcpKey(deps, admin.tenantId, admin.plan, body);
    return { status: 201, body: key, resourceId: key.id, params: { name: key.name, scopes: key.scopes, expires_at: key.expires_at, rate_limit: body.rate_limit ?? null } };
  }));
  router.delete(`${BASE}/:kid`, write(deps, 'mcp_keys.revoke', 'write', async (admin, req) => {
    const key = await revokeMcpKey(deps, admin.tenantId, param(req, 'kid'));
    return { status: 200, body: key, resourceId: key.id };
  }));
  router.put(`${BASE}/:kid/tool-groups/:group`, write(deps, 'mcp_keys.enable_tool_group', 'elevate', async (admin, req) => {
    const group = parseGroup(param(req, 'group'));
    const key = await setToolGroup(deps, admin.tenantId, param(req, 'kid'), group, true, `${admin.kind}:${admin.id}`);
    return { status: 200, body: key, resourceId: key.id, params: { tool_group: group } };
  }));
  router.delete(`${BASE}/:kid/tool-groups/:group`, write(deps, 'mcp_keys.disable_tool_group', 'write', async (admin, req) => {
    const group = parseGroup(param(req, 'group'));
    const key = await setToolGroup(deps, admin.tenantId, param(req, 'kid'), group, false, `${admin.kind}:${admin.id}`);
    return { status: 200, body: key, resourceId: key.id, params: { tool_group: group } };
  }));
}
