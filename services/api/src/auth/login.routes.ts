import { AppError } from '@hookline/errors';
import { hashPassword, verifyPassword } from '@hookline/signing';
import type { PublicRoute } from '../http/route';
import { ok } from '../lib/format';
import { issueSessionToken } from './session-jwt';

// Compared against when the email is unknown, so timing does not reveal which emails exist.
let decoyHash: Promise<string> | null = null;

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

export const loginRoutes: PublicRoute[] = [
  {
    auth: 'none',
    method: 'post',
    path: '/auth/login',
    operationId: 'auth.login',
    body: loginBody,
    doc: {
      summary: 'Log in with email and password; returns a tenant-scoped session JWT',
      description: 'The token carries every API scope of the user\'s tenant and expires after JWT_EXPIRES_IN (default 1h). Only HS256 is accepted.',
      tag: 'Authentication',
      status: 200,
      response: sessionView,
      errors: [401],
    },
    handler: async (ctx) => {
      const { email, password } = ctx.body as { email: string; password: string };
      const user = await ctx.app.prisma.user.findFirst({ where: { email: { equals: email.trim(), mode: 'insensitive' } } });
      decoyHash ??= hashPassword('decoy-password');
      const valid = await verifyPassword(password, user?.passwordHash ?? (await decoyHash));
      if (!user || !valid) throw new AppError('unauthorized', 'The email or password is wrong.');
      const { token, expiresAt } = issueSessionToken(ctx.app.config.JWT_SECRET, ctx.app.config.JWT_EXPIRES_IN, user.id, user.tenantId);
      return ok({ token, token_type: 'Bearer', expires_at: expiresAt.toISOString(), tenant_id: user.tenantId, user_id: user.id });
    },
  },
];
