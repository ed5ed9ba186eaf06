import { AppError, type FieldError } from '@hookline/errors';
import { newId } from '@hookline/db';
import type { RequestContext } from '../context';
import { findPage, readPage } from '../http/pagination';
import type { AuthedRoute } from '../http/route';
import { listBody, listOf } from '../http/schemas';
import { asObject, created, iso, noContent, ok } from '../lib/format';
import { duplicateName, isUniqueViolation } from '../lib/config-writes';
import { CREDENTIAL_NAMES, keepRedactedHeaders, shownHeaders } from '../lib/credential-headers';
import type { SavedPayload } from '../lib/models';

const TAG = 'Saved payloads';

// Credential header values (authorization, cookie, signatures, …: isCredentialHeader, the
// destinations' rule) are write-only: every view, the create and PUT answers included, shows
// "[redacted]", and a PUT that sends "[redacted]" back keeps the stored value
// (lib/credential-headers.ts, shared with destinations).
function toView(p: SavedPayload): Record<string, unknown> {
  return { id: p.id, name: p.name, content_type: p.contentType, headers: shownHeaders(p.headers), body: p.body, created_at: iso(p.createdAt), updated_at: iso(p.updatedAt) };
}

const HEADERS_SHOWN = `Credential header values (as for a destination's config.headers: ${CREDENTIAL_NAMES}) are write-only and shown as "[redacted]"`;

const view = {
  type: 'object',
  required: ['id', 'name', 'content_type', 'headers', 'body', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', pattern: '^spl_' },
    name: { type: 'string' },
    content_type: { type: 'string' },
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: HEADERS_SHOWN },
    body: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
};

/** A template's most bytes (UTF-8), as the inbound payload limit: maxLength counts characters only. */
const MAX_TEMPLATE_BYTES = 262_144;

const body = {
  type: 'object',
  required: ['name', 'body'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    content_type: { type: 'string', minLength: 1, maxLength: 200 },
    headers: {
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 4000 },
      maxProperties: 50,
      description: `${HEADERS_SHOWN}. A PUT that sends "[redacted]" back keeps the stored value of that header (same name as shown); "[redacted]" with no stored value to keep (on create, or a header not stored) is a 400 validation-error naming headers.<Name>, and nothing is written`,
    },
    body: { type: 'string', maxLength: MAX_TEMPLATE_BYTES, description: 'The payload template: up to 256 KB (262,144 bytes in UTF-8; a longer one is a 400)' },
  },
  additionalProperties: false,
};

interface Body {
  name: string;
  content_type?: string;
  headers?: Record<string, string>;
  body: string;
}

/** The body's size in bytes, checked before anything is written (a 3-byte character counts 3). */
function templateOf(ctx: RequestContext): Body {
  const b = ctx.body as Body;
  if (Buffer.byteLength(b.body, 'utf8') > MAX_TEMPLATE_BYTES) throw AppError.validation([{ field: 'body', message: `must be at most ${MAX_TEMPLATE_BYTES} bytes (UTF-8)` }]);
  return b;
}

/** Names are unique per tenant (a database constraint): a clash is a 409, nothing written. */
async function uniqueName<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicateName('saved payload', name);
    throw err;
  }
}

export async function listSavedPayloads(ctx: RequestContext): Promise<Record<string, unknown>> {
  const result = await findPage(readPage(ctx.query, 'spl'), (a) => ctx.app.prisma.savedPayload.findMany({ ...a, where: { tenantId: ctx.tenantId, ...a.where } }));
  return listBody('saved_payloads', result, toView);
}

/** The headers a write stores: "[redacted]" keeps the stored value (none on create: refused). */
function headersToStore(b: Body, stored: Record<string, unknown>): Record<string, unknown> {
  const errors: FieldError[] = [];
  const headers = keepRedactedHeaders(b.headers ?? {}, stored, 'headers', errors);
  if (errors.length) throw AppError.validation(errors);
  return headers;
}

export async function createSavedPayload(ctx: RequestContext) {
  const b = templateOf(ctx);
  const headers = headersToStore(b, {});
  const row = await uniqueName(b.name, () =>
    ctx.app.prisma.savedPayload.create({ data: { id: newId('spl'), tenantId: ctx.tenantId, name: b.name, contentType: b.content_type ?? 'application/json', headers: headers as object, body: b.body } }),
  );
  return created(toView(row));
}

async function find(ctx: RequestContext): Promise<SavedPayload> {
  const row = await ctx.app.prisma.savedPayload.findFirst({ where: { id: ctx.params['id']!, tenantId: ctx.tenantId } });
  if (!row) throw AppError.notFound('saved payload');
  return row;
}

export const savedPayloadSchemas = { list: listOf('saved_payloads', view), view, body };
const BASE = '/v1/tenants/:tid/saved-payloads';
const read = { auth: 'credential', tenant: 'path', scope: 'read:saved-payloads' } as const;
const write = { auth: 'credential', tenant: 'path', scope: 'write:saved-payloads' } as const;

export const savedPayloadRoutes: AuthedRoute[] = [
  { ...read, method: 'get', path: BASE, operationId: 'savedPayloads.list', doc: { summary: 'List saved payload templates', tag: TAG, response: listOf('saved_payloads', view), query: ['limit', 'cursor', 'offset'] }, handler: async (ctx) => ok(await listSavedPayloads(ctx)) },
  { ...write, method: 'post', path: BASE, operationId: 'savedPayloads.create', body, doc: { summary: 'Save a payload template', tag: TAG, response: view, errors: [409] }, handler: createSavedPayload },
  { ...read, method: 'get', path: `${BASE}/:id`, operationId: 'savedPayloads.get', doc: { summary: 'Get a saved payload', tag: TAG, response: view, errors: [404] }, handler: async (ctx) => ok(toView(await find(ctx))) },
  {
    ...write,
    method: 'put',
    path: `${BASE}/:id`,
    operationId: 'savedPayloads.update',
    body,
    doc: { summary: 'Replace a saved payload', tag: TAG, response: view, errors: [404, 409] },
    handler: async (ctx) => {
      const b = templateOf(ctx);
      const id = ctx.params['id']!;
      // One transaction: the row is locked, its stored headers give the values "[redacted]"
      // keeps, and the update returns it (a template missing or deleted meanwhile is a 404),
      // so the answer is this PUT's own row.
      const row = await uniqueName(b.name, () =>
        ctx.app.prisma.$transaction(async (tx) => {
          const [current] = await tx.$queryRaw<{ headers: unknown }[]>`SELECT headers FROM saved_payloads WHERE id = ${id} AND tenant_id = ${ctx.tenantId} FOR UPDATE`;
          if (!current) throw AppError.notFound('saved payload');
          const headers = headersToStore(b, asObject(current.headers));
          return tx.savedPayload.update({ where: { id, tenantId: ctx.tenantId }, data: { name: b.name, contentType: b.content_type ?? 'application/json', headers: headers as object, body: b.body } });
        }),
      );
      return ok(toView(row));
    },
  },
  {
    ...write,
    method: 'delete',
    path: `${BASE}/:id`,
    operationId: 'savedPayloads.delete',
    doc: { summary: 'Delete a saved payload', tag: TAG, status: 204, response: null, errors: [404] },
    handler: async (ctx) => {
      const { count } = await ctx.app.prisma.savedPayload.deleteMany({ where: { id: ctx.params['id']!, tenantId: ctx.tenantId } });
      if (!count) throw AppError.notFound('saved payload');
      return noContent();
    },
  },
];
