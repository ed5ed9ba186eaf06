import type { Request, RequestHandler, Response, Router } from 'express';
import type * as z from 'zod';
import { AppError } from '@hookline/errors';
import { authenticateApiKeyOnly, authenticateMcp, requireScope } from './mcp-auth';
import { startAudit, type AuditEnd } from '../audit/audit-write';
import { assertMayGrant, assertMayRevoke } from './mcp-grants';
import type { RateLimit } from '../config';
import { apiContextOf, type ApiCaller, type McpDeps } from './mcp-deps';
import { errorStatus } from '../http/api-problem';
import { assertJsonBody } from '../http/json-body';
import { problemReply, replayedBody, send } from '../http/route';
import { listBody } from '../http/schemas';
import { requestHash, runIdempotent, startIdempotent, validIdempotencyKey } from '../limits/idempotency';
import { param, parseOr400, requestIdOf } from './mcp-http';
import { mcpKeyLimit, rateLimitMcp } from './mcp-rate-limit';
import { createKeyBody, createMcpKey, DEFAULT_MCP_SCOPES, listMcpKeys, parseGroup, revokeMcpKey, setToolGroup } from './mcp-keys';

const BASE = '/v1/tenants/:tid/mcp-keys';

interface KeyAdmin extends ApiCaller {
  viaMcp: boolean;
  /** An MCP key's effective rate limit (its own or MCP_KEY_RATE_LIMIT, capped at the plan); null for a control-API credential. */
  rateLimit: RateLimit | null;
}

/**
 * Who is calling: an MCP key (X-MCP-API-Key) or a control-API credential; then its tenant's
 * rate limit, as on every control-API route, and an MCP key's own (429, not audited there
 * either).
 */
async function identify(deps: McpDeps, req: Request, res: Response): Promise<KeyAdmin> {
  if (req.headers['x-mcp-api-key'] !== undefined) {
    const p = await authenticateMcp(deps, req.headers);
    const rateLimit = mcpKeyLimit(deps, p.plan, p.rateLimit).limit;
    const admin: KeyAdmin = { kind: 'mcp_key', id: p.keyId, tenantId: p.tenantId, plan: p.plan, scopes: p.scopes, expiresAt: p.expiresAt, viaMcp: true, rateLimit };
    await rateLimitMcp(deps, admin, p, res);
    return admin;
  }
  const admin: KeyAdmin = { ...(await (deps.authenticateApiCaller ?? ((h) => authenticateApiKeyOnly(deps, h)))(req.headers)), viaMcp: false, rateLimit: null };
  await rateLimitMcp(deps, admin, null, res);
  return admin;
}

/**
 * Who may manage MCP keys: a control-API credential (`read:api-keys` to list,
 * `write:api-keys` to change), or an MCP key holding `mcp:admin:keys`. Enabling a write
 * group is the one elevation an MCP key can never do, not even for another key. What a
 * control-API credential may give an MCP key (scopes, write groups) is bounded by its own
 * control-API scopes too (mcp-grants.ts).
 */
function authorize(admin: KeyAdmin, req: Request, need: 'read' | 'write' | 'elevate'): void {
  if (admin.viaMcp) requireScope(admin.scopes, need === 'elevate' ? 'write:api-keys' : 'mcp:admin:keys');
  else requireScope(admin.scopes, need === 'read' ? 'read:api-keys' : 'write:api-keys');
  if (param(req, 'tid') !== admin.tenantId) throw AppError.notFound('tenant');
}

interface Outcome {
  status: number;
  body: unknown;
  resourceId: string | null;
  params?: Record<string, unknown>;
}

type Action<B> = (admin: KeyAdmin, req: Request, body: B) => Promise<Outcome>;

/**
 * `Idempotency-Key` on a key-management write, as the control API's route pipeline applies it
 * to every write (http/pipeline.ts), in the same store (limits/idempotency.ts: per tenant and
 * per credential, 24 h, the response sealed since a create answers the key itself): the same
 * key and request (method, path, body) from the same credential answer the original status
 * and body with `Idempotent-Replayed: true` and change nothing; another request under the key
 * is a 409 idempotency-conflict. An error outcome is kept too, a 5xx included: once the
 * change has started, its outcome is the key's (runIdempotent), never run twice.
 * Another credential's identical request is not a replay: it is authorized and run on its
 * own (its scopes, its rate-limit cap), so it never receives a key another credential made.
 */
async function idempotent(deps: McpDeps, admin: KeyAdmin, req: Request, res: Response, run: () => Promise<Outcome>): Promise<Outcome> {
  const { tenantId } = admin;
  const actor = `${admin.kind}:${admin.id}`;
  const header = req.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) return run();
  if (!validIdempotencyKey(key)) throw AppError.validation([{ field: 'Idempotency-Key', message: 'must be 1-255 printable ASCII characters' }]);
  const app = apiContextOf(deps, 'Idempotency-Key');
  const started = await startIdempotent(app, tenantId, actor, key, requestHash(req.method.toLowerCase(), req.path, (req.body as unknown) ?? null));
  if (started.kind === 'replay') {
    res.setHeader('Idempotent-Replayed', 'true');
    const id = (started.body as { id?: unknown } | undefined)?.id;
    return { status: started.status, body: replayedBody(started.status, started.body, requestIdOf(res)), resourceId: typeof id === 'string' ? id : req.params['kid'] ? param(req, 'kid') : null, params: { idempotent_replay: true } };
  }
  return runIdempotent(app, started, run, (err) => problemReply(err, requestIdOf(res)));
}

/**
 * A key-management write, once the caller is known: authorized, its JSON body (when it takes
 * one) checked, then run under its Idempotency-Key; audited, refusals included, fail closed as
 * the write tools are (audit/audit-write.ts, startAudit): the row (the path, and the key the path
 * names) is written first and nothing runs when it cannot be (500); the outcome, with the key
 * and the parameters known only then, is recorded once the request ends.
 */
function write<B = undefined>(deps: McpDeps, action: string, need: 'write' | 'elevate', run: Action<B>, body?: z.ZodType<B>): RequestHandler {
  return async (req: Request, res: Response) => {
    const admin = await identify(deps, req, res);
    const finish = await startAudit(deps.pool, {
      tenantId: admin.tenantId,
      actor: `${admin.kind}:${admin.id}`,
      action,
      resourceId: req.params['kid'] ? param(req, 'kid') : null,
      params: { path: req.path },
      requestId: requestIdOf(res),
    });
    const ended = (status: number, end?: AuditEnd) =>
      finish(status, end).catch((e: Error) => deps.logger.error('mcp audit outcome write failed', { action, request_id: requestIdOf(res), err: e.message }));
    let out: Outcome;
    try {
      authorize(admin, req, need);
      let parsed = undefined as B;
      if (body) {
        assertJsonBody(req);
        parsed = parseOr400(body, req.body);
      }
      out = await idempotent(deps, admin, req, res, () => run(admin, req, parsed));
    } catch (err) {
      await ended(errorStatus(err));
      throw err;
    }
    await ended(out.status, { resourceId: out.resourceId, params: out.params ?? {} });
    send(res, { status: out.status, body: out.body });
  };
}

export function mcpKeyRoutes(router: Router, deps: McpDeps, json: RequestHandler): void {
  router.get(BASE, async (req, res) => {
    const admin = await identify(deps, req, res);
    authorize(admin, req, 'read');
    // `{ mcp_keys, next_cursor[, next_offset] }`, as every list of the api.
    res.json(listBody('mcp_keys', await listMcpKeys(deps, admin.tenantId, req.query as Record<string, unknown>), (k) => k));
  });
  router.post(BASE, json, write(deps, 'mcp_keys.create', 'write', async (admin, _req, body) => {
    // An MCP administrator hands out only scopes it holds itself, the default scopes included,
    // and no more rate limit than its own (mcp-key-limit.ts). A control-API credential hands
    // out only MCP scopes whose control-API scopes it holds (mcp-grants.ts), the default
    // scopes included too.
    const scopes = body.scopes ?? DEFAULT_MCP_SCOPES;
    if (admin.viaMcp) {
      const beyond = scopes.find((s) => !admin.scopes.has(s));
      if (beyond) throw new AppError('insufficient-scope', `A key cannot be given ${beyond}, which this credential lacks.`, { required_scope: beyond });
    } else {
      for (const scope of scopes) assertMayGrant(admin.scopes, { scope });
    }
    const key = await createMcpKey(deps, admin.tenantId, admin.plan, body, admin.rateLimit, admin.expiresAt ?? null);
    return { status: 201, body: key, resourceId: key.id, params: { name: key.name, scopes: key.scopes, expires_at: key.expires_at, rate_limit: body.rate_limit ?? null } };
  }, createKeyBody));
  router.delete(`${BASE}/:kid`, write(deps, 'mcp_keys.revoke', 'write', async (admin, req) => {
    // Not a key holding scopes the caller could not grant (mcp-grants.ts): 403 permission-denied.
    const key = await revokeMcpKey(deps, admin.tenantId, param(req, 'kid'), (k) => assertMayRevoke(admin, k));
    return { status: 200, body: key, resourceId: key.id };
  }));
  router.put(`${BASE}/:kid/tool-groups/:group`, write(deps, 'mcp_keys.enable_tool_group', 'elevate', async (admin, req) => {
    const group = parseGroup(param(req, 'group'));
    // Only a control-API credential gets here (authorize): it needs the control-API scopes
    // of what the group's tools do (mcp-grants.ts).
    assertMayGrant(admin.scopes, { group });
    const key = await setToolGroup(deps, admin.tenantId, param(req, 'kid'), group, true, `${admin.kind}:${admin.id}`);
    return { status: 200, body: key, resourceId: key.id, params: { tool_group: group } };
  }));
  router.delete(`${BASE}/:kid/tool-groups/:group`, write(deps, 'mcp_keys.disable_tool_group', 'write', async (admin, req) => {
    const group = parseGroup(param(req, 'group'));
    const key = await setToolGroup(deps, admin.tenantId, param(req, 'kid'), group, false, `${admin.kind}:${admin.id}`);
    return { status: 200, body: key, resourceId: key.id, params: { tool_group: group } };
  }));
}
