import { AppError } from '@hookline/errors';
import { keyExpiry } from '../auth/key-expiry';
import { newId } from '@hookline/db';
import { API_SCOPES, newApiKey } from '@hookline/signing';
import { findPage, readPage } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { created, iso, ok } from '../lib/format';
import type { ApiKey } from '../lib/models';

const TAG = 'API keys';
const BASE = '/v1/tenants/:tid/api-keys';

function keyToView(k: ApiKey, secret?: string): Record<string, unknown> {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: iso(k.createdAt),
    last_used_at: iso(k.lastUsedAt),
    expires_at: iso(k.expiresAt),
    revoked_at: iso(k.revokedAt),
    ...(secret ? { key: secret } : {}),
  };
}

const tsOrNull = { type: ['string', 'null'], format: 'date-time' };
const keyView = {
  type: 'object',
  required: ['id', 'name', 'prefix', 'scopes', 'created_at', 'last_used_at', 'revoked_at'],
  properties: {
    id: { type: 'string', pattern: '^key_' },
    name: { type: 'string' },
    prefix: { type: 'string', description: 'First characters of the key, to tell keys apart' },
    scopes: { type: 'array', items: { type: 'string' } },
    created_at: { type: 'string', format: 'date-time' },
    last_used_at: tsOrNull,
    expires_at: tsOrNull,
    revoked_at: tsOrNull,
    key: { type: 'string', description: 'The key itself: only in the create response' },
  },
};

const createBody = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    scopes: { type: 'array', items: { type: 'string', enum: [...API_SCOPES] }, minItems: 1, uniqueItems: true, description: 'Default: every scope the caller holds' },
    expires_at: { type: 'string', format: 'date-time' },
  },
  additionalProperties: false,
};

const common = { auth: 'credential', tenant: 'path' } as const;

export const apiKeyRoutes: AuthedRoute[] = [
  {
    ...common,
    scope: 'read:api-keys',
    method: 'get',
    path: BASE,
    operationId: 'apiKeys.list',
    doc: { summary: 'List API keys (secrets are never shown again)', tag: TAG, response: listOf('api_keys', keyView), query: ['limit', 'cursor', 'offset'] },
    handler: async (ctx) => {
      const result = await findPage(readPage(ctx.query, 'key'), (a) => ctx.app.prisma.apiKey.findMany({ ...a, where: { tenantId: ctx.tenantId, kind: 'api', ...a.where } }));
      return ok(listBody('api_keys', result, (k) => keyToView(k)));
    },
  },
  {
    ...common,
    scope: 'write:api-keys',
    method: 'post',
    path: BASE,
    operationId: 'apiKeys.create',
    body: createBody,
    doc: {
      summary: 'Create an API key; the key is in this response only',
      description:
        "A key can only be given scopes its creator holds. A key made by an API key that expires cannot outlive it: without expires_at it gets its creator's, and a later expires_at is 422.",
      tag: TAG,
      response: keyView,
      errors: [422],
    },
    handler: async (ctx) => {
      const b = ctx.body as { name: string; scopes?: string[]; expires_at?: string };
      const scopes = b.scopes ?? API_SCOPES.filter((s) => ctx.principal.scopes.has(s));
      const missing = scopes.find((s) => !ctx.principal.scopes.has(s));
      if (missing) throw new AppError('insufficient-scope', `A key cannot be given ${missing}, which this credential lacks.`, { required_scope: missing });
      const expiresAt = keyExpiry(b.expires_at, ctx.principal.expiresAt ?? null);
      const k = newApiKey();
      const row = await ctx.app.prisma.apiKey.create({ data: { id: newId('key'), tenantId: ctx.tenantId, name: b.name, prefix: k.prefix, keyHash: k.hash, scopes, expiresAt } });
      return created(keyToView(row, k.key));
    },
  },
  {
    ...common,
    scope: 'write:api-keys',
    method: 'delete',
    path: `${BASE}/:kid`,
    operationId: 'apiKeys.revoke',
    doc: { summary: 'Revoke an API key (effective immediately)', description: 'A key holding scopes the caller lacks answers 403 permission-denied (resource_id).', tag: TAG, response: keyView, errors: [403, 404] },
    handler: async (ctx) => {
      const id = ctx.params['kid']!;
      const target = await ctx.app.prisma.apiKey.findFirst({ where: { id, tenantId: ctx.tenantId, kind: 'api' } });
      if (!target) throw AppError.notFound('API key');
      // Object permission: a key cannot revoke a key that holds scopes it does not.
      if (target.scopes.some((s) => !ctx.principal.scopes.has(s))) {
        throw new AppError('permission-denied', 'This credential cannot revoke a key with scopes it does not hold.', { resource_id: id });
      }
      await ctx.app.prisma.apiKey.updateMany({ where: { id, tenantId: ctx.tenantId, revokedAt: null }, data: { revokedAt: new Date() } });
      return ok(keyToView((await ctx.app.prisma.apiKey.findFirst({ where: { id, tenantId: ctx.tenantId } }))!));
    },
  },
];
