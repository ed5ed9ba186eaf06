import { AppError } from '@hookline/errors';
import { startAudit, type FinishAudit } from '../audit/audit-write';
import { actorOf, type RequestContext } from '../context';
import { problemReply, type AuthedRoute } from '../http/route';
import { noContent } from '../lib/format';

// PostgreSQL's clock, as login's issue time (USER_BY_EMAIL): replicas' clocks never compare.
// greatest() ignores NULL and never moves the stamp back.
const LOG_OUT_EVERYWHERE = `UPDATE users SET sessions_valid_after = greatest(clock_timestamp(), sessions_valid_after) WHERE id = $1 AND tenant_id = $2`;

/**
 * Audited like a login (action `auth.logout` on both paths, resource the user): the pipeline
 * would name the action after each path's operationId. Fail closed, as every write
 * (audit/audit-write.ts, startAudit): the row is written before the logout, and when it
 * cannot be nothing is changed (500); the outcome is recorded once the handler ends. An API
 * key's refusal is audited too, under the key, as any refused write is.
 */
function startLogoutAudit(ctx: RequestContext): Promise<FinishAudit> {
  const { principal } = ctx;
  return startAudit(ctx.app.pool, {
    tenantId: principal.tenantId,
    actor: actorOf(principal),
    action: 'auth.logout',
    resourceId: principal.kind === 'user' ? principal.id : null,
    params: {},
    requestId: ctx.requestId,
  });
}

const logout: AuthedRoute = {
  auth: 'credential',
  tenant: 'flat',
  audit: false,
  method: 'post',
  path: '/auth/logout',
  operationId: 'auth.logout',
  doc: {
    summary: "Log out everywhere: end every session token of the caller's user issued until now",
    description:
      'Authenticated with a session token from POST /auth/login (Authorization: Bearer <jwt>). Every session token of that user issued up to this moment, the one sent included, ' +
      'is refused from now on (401 unauthorized, as an expired one) on every replica; a login afterwards works at once. Answers 204 without a body. ' +
      'An API key is a valid credential that cannot own a session: 403 permission-denied naming the key in resource_id (revoke a key with DELETE /v1/tenants/{tid}/api-keys/{id}). ' +
      'Audited in the tenant (auth.logout, actor user:<id>, outcome 204; an API key\'s attempt under api_key:<id>, 403), fail closed: the row is written before the logout, and when it cannot be the answer is 500 and nobody is logged out.',
    tag: 'Authentication',
    status: 204,
    response: null,
    errors: [403],
  },
  handler: async (ctx) => {
    const { principal } = ctx;
    const finish = await startLogoutAudit(ctx);
    let status = 204;
    try {
      if (principal.kind !== 'user') {
        throw new AppError('permission-denied', 'Only a session token (from POST /auth/login) can log out; an API key is revoked instead.', { resource_id: principal.id });
      }
      await ctx.app.pool.query(LOG_OUT_EVERYWHERE, [principal.id, principal.tenantId]);
      return noContent();
    } catch (err) {
      status = problemReply(err, ctx.requestId).status;
      throw err;
    } finally {
      await finish(status).catch((err: Error) => ctx.logger.error('logout audit outcome not recorded; the row keeps the unfinished outcome', { actor: actorOf(principal), error: err.message }));
    }
  },
};

/** `POST /auth/logout` and, under the /v1 base, `POST /v1/auth/logout`: one handler, as login. */
export const logoutRoutes: AuthedRoute[] = [
  logout,
  { ...logout, path: '/v1/auth/logout', operationId: 'auth.logoutV1', doc: { ...logout.doc, summary: 'Log out everywhere (POST /auth/logout under the /v1 base; the same route)' } },
];
