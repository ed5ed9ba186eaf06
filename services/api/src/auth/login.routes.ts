import type { Pool } from '@hookline/db';
import { AppError } from '@hookline/errors';
import { hashPassword, verifyPassword } from '@hookline/signing';
import type { PublicRoute, RouteDef } from '../http/route';
import { writeAudit } from '../audit/audit-write';
import type { RequestContext } from '../context';
import { ok } from '../lib/format';
import { guardLogin } from './login-throttle';
import { logoutRoutes } from './logout.routes';
import { issueSessionToken } from './session-jwt';

// Compared against when the email is unknown, so timing does not reveal which emails exist.
let decoyHash: Promise<string> | null = null;

// The email is compared exactly, ignoring case only (trimmed, lower-cased on both sides): a
// case-insensitive match in Prisma is ILIKE, where `_` and `%` are wildcards (`%%%` logged in
// as the first user; `john_doe@…` was checked against `johnxdoe@…` of another tenant). Two
// users whose emails differ only in case are ambiguous: neither logs in.
// The same read gives the token's issue time (iat_ms) on PostgreSQL's clock, the one every
// replica shares and logout stamps sessions_valid_after with, and that stamp itself.
export const USER_BY_EMAIL = `SELECT id, tenant_id, password_hash,
  floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms,
  round(extract(epoch FROM sessions_valid_after) * 1000)::float8 AS sessions_valid_after_ms
  FROM users WHERE lower(email) = $1 LIMIT 2`;

interface LoginUser {
  id: string;
  tenantId: string;
  /** iat_ms of the token: strictly after the user's last logout, even one of the same millisecond. */
  issuedAtMs: number;
}

interface UserRow {
  id: string;
  tenant_id: string;
  password_hash: string;
  now_ms: number;
  sessions_valid_after_ms: number | null;
}

/** The one user with this email (null when none or ambiguous), and whether the password is theirs, in about the same time either way. */
async function checkPassword(pool: Pool, email: string, password: string): Promise<{ user: LoginUser | null; valid: boolean }> {
  const { rows } = await pool.query<UserRow>(USER_BY_EMAIL, [email.trim().toLowerCase()]);
  const user = rows.length === 1 ? rows[0]! : null;
  decoyHash ??= hashPassword('decoy-password');
  const valid = await verifyPassword(password, user?.password_hash ?? (await decoyHash));
  if (!user) return { user: null, valid: false };
  // A logout read here happened before this login: the token must outlive it. One that
  // lands after this read (and before the token is out) kills it: concurrent, it errs
  // toward logging out.
  const issuedAtMs = Math.max(user.now_ms, (user.sessions_valid_after_ms ?? -Infinity) + 1);
  return { user: { id: user.id, tenantId: user.tenant_id, issuedAtMs }, valid };
}

/**
 * A login of a known user is audited in its tenant (action `auth.login`, actor and resource
 * the user, outcome 200 or 401; never the email or password). One for an unknown email has
 * no tenant to be audited in; the throttle counts it all the same. A failed audit write
 * does not change the answer.
 */
async function auditLogin(ctx: Omit<RequestContext, 'principal' | 'tenantId'>, user: { id: string; tenantId: string }, status: number): Promise<void> {
  await writeAudit(ctx.app.pool, { tenantId: user.tenantId, actor: `user:${user.id}`, action: 'auth.login', resourceId: user.id, params: {}, status, requestId: ctx.requestId }).catch((err: Error) =>
    ctx.logger.warn('login audit not recorded', { user_id: user.id, error: err.message }),
  );
}

const loginBody = {
  type: 'object',
  required: ['email', 'password'],
  properties: { email: { type: 'string', minLength: 3, maxLength: 320 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
  additionalProperties: false,
};

const sessionView = {
  type: 'object',
  required: ['token', 'token_type', 'expires_at', 'tenant_id', 'user_id'],
  properties: {
    token: { type: 'string', description: 'HS256 JWT; send as Authorization: Bearer <token>' },
    token_type: { const: 'Bearer' },
    expires_at: { type: 'string', format: 'date-time' },
    tenant_id: { type: 'string' },
    user_id: { type: 'string' },
  },
};

const login: PublicRoute = {
  auth: 'none',
  method: 'post',
  path: '/auth/login',
  operationId: 'auth.login',
  body: loginBody,
  doc: {
    summary: 'Log in with email and password; returns a tenant-scoped session JWT',
    description:
      "The token carries the scopes of the user's role, read on each request (owner and admin: every API scope; member: all but write:api-keys and write:clusters; viewer: the read:* scopes) and expires after JWT_EXPIRES_IN (default 1h). Only HS256 is accepted. " +
      'Failed logins are limited per email (LOGIN_MAX_FAILURES_PER_ACCOUNT, default 10) and per client address (LOGIN_MAX_FAILURES_PER_IP, default 50; IPv6 per /64) over LOGIN_FAILURE_WINDOW_SECONDS (default 900); past either, 429 rate-limit-exceeded with retry_after_seconds and Retry-After, and the password is not checked. A successful login is not counted and clears its email\'s failures. A login of a known user is audited in its tenant (auth.login, actor user:<id>, outcome 200 or 401). ' +
      'POST /auth/logout ends every session token of the user issued until then; a login after it works at once.',
    tag: 'Authentication',
    status: 200,
    response: sessionView,
    errors: [401, 429],
  },
  handler: async (ctx) => {
    const { email, password } = ctx.body as { email: string; password: string };
    const guard = await guardLogin(ctx.app, ctx.logger, email, ctx.clientAddress);
    const { user, valid } = await checkPassword(ctx.app.pool, email, password).catch(async (err: unknown) => {
      await guard.abandoned();
      throw err;
    });
    if (user) await auditLogin(ctx, user, valid ? 200 : 401);
    if (!user || !valid) throw new AppError('unauthorized', 'The email or password is wrong.');
    await guard.succeeded();
    const { token, expiresAt } = issueSessionToken(ctx.app.config.JWT_SECRET, ctx.app.config.JWT_EXPIRES_IN, user.id, user.tenantId, user.issuedAtMs);
    return ok({ token, token_type: 'Bearer', expires_at: expiresAt.toISOString(), tenant_id: user.tenantId, user_id: user.id });
  },
};

/**
 * SPEC.md names the route `POST /auth/login` beside a backend base of `{base_url}/v1`: both
 * are served, one handler (one throttle, one audit). Logout (logout.routes.ts) the same way.
 */
export const loginRoutes: RouteDef[] = [
  login,
  { ...login, path: '/v1/auth/login', operationId: 'auth.loginV1', doc: { ...login.doc, summary: 'Log in with email and password (POST /auth/login under the /v1 base; the same route)' } },
  ...logoutRoutes,
];
