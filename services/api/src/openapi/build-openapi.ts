import { isWrite, type RouteDef } from '../http/route';
import { ERROR_DESCRIPTIONS, IDEMPOTENCY_KEY_PARAMETER, problemSchema, QUERY_PARAMETERS, securitySchemes } from './components';

type Doc = Record<string, unknown>;

/** `/v1/tenants/:tid/x` → `/v1/tenants/{tid}/x` */
export function toOpenApiPath(expressPath: string): string {
  return expressPath.replace(/:(\w+)/g, '{$1}');
}

function errorStatuses(route: RouteDef): number[] {
  // 400 on every route: besides bodies and queries, a NUL or a malformed %-escape in the path is refused.
  // 500 and 503 (the database unreachable: api-problem.ts) on every route too.
  const s = new Set<number>([400, 500, 503, ...(route.doc.errors ?? [])]);
  if (route.body) [413, 415].forEach((x) => s.add(x));
  if (route.auth !== 'none') [401, 429].forEach((x) => s.add(x));
  if (route.auth !== 'none' && route.scope) s.add(403);
  if (route.auth !== 'none' && (route.tenant === 'path' || route.tenant === 'flat')) s.add(404);
  if (route.auth !== 'none' && isWrite(route.method)) s.add(409);
  return [...s].sort();
}

function operation(route: RouteDef): Doc {
  const params: Doc[] = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  for (const q of route.doc.query ?? []) {
    const { name = q, ...param } = QUERY_PARAMETERS[q];
    params.push({ name, in: 'query', required: false, ...param });
  }
  if (route.auth !== 'none' && route.tenant === 'flat') {
    params.push({ name: 'X-Tenant-ID', in: 'header', required: false, description: "Tenant to act on; must be the credential's", schema: { type: 'string' } });
  }
  if (route.auth !== 'none' && isWrite(route.method)) {
    params.push({ ...IDEMPOTENCY_KEY_PARAMETER });
  }
  const status = route.doc.status ?? (route.method === 'post' ? 201 : 200);
  const responses: Doc = {
    [status]: route.doc.response ? { description: 'Success', content: { 'application/json': { schema: route.doc.response } } } : { description: 'No content' },
  };
  for (const e of errorStatuses(route)) {
    responses[e] = { description: ERROR_DESCRIPTIONS[e] ?? 'Error', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
  }
  const security = route.auth === 'none' ? [] : route.auth === 'cluster' ? [{ serviceSignature: [] }] : [{ apiKey: [] }, { bearer: [] }];
  return {
    operationId: route.operationId,
    summary: route.doc.summary,
    ...(route.doc.description ? { description: route.doc.description } : {}),
    tags: [route.doc.tag],
    security,
    ...(route.auth !== 'none' && route.scope ? { 'x-required-scope': route.scope } : {}),
    parameters: params,
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: route.body } } } } : {}),
    responses,
  };
}

const plain = (summary: string, schema: Doc): Doc => ({
  summary,
  tags: ['Health'],
  security: [],
  responses: { 200: { description: 'OK', content: { 'application/json': { schema } } }, 503: { description: 'Not ready', content: { 'application/json': { schema } } } },
});

/** Path items mounted outside the route list (plugins), keyed by OpenAPI path. */
export type ExtraPaths = Record<string, Record<string, unknown>>;

/** OpenAPI 3.1 for every route in the list, plus the probes, plugins and this document itself. */
export function buildOpenApi(routes: readonly RouteDef[], extra: ExtraPaths = {}): Doc {
  const paths: Record<string, Doc> = {
    '/healthz': { get: plain('Liveness', { type: 'object', required: ['status'] }) },
    '/readyz': { get: plain('Readiness: database and Redis answer, not draining', { type: 'object', required: ['status', 'checks'] }) },
  };
  for (const [p, ops] of Object.entries(extra)) paths[p] = { ...paths[p], ...ops };
  for (const r of routes) (paths[toOpenApiPath(r.path)] ??= {})[r.method] = operation(r);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Hookline control API',
      version: '1.0.0',
      description:
        'Tenant-scoped routes (/v1/tenants/{tid}/…) are the authoritative contract; the flat routes (X-Tenant-ID or the credential\'s tenant) and the internal dashboard base (/api/bff/v1) read and write the same data through the same code. Every error is RFC 9457 problem details with instance = request id. OPTIONS on a path listed here answers 204 No Content with an Allow header naming the methods listed for it, HEAD wherever GET is, and OPTIONS (not listed per operation); it needs no credential and reads no body. No CORS is served: no Access-Control-* headers, preflights included. A path listed here called with a method it does not list answers 405 method-not-allowed with the same Allow header; an unknown path answers 404, OPTIONS included. a body sent with a Content-Type other than application/json answers 415 unsupported-media-type. Lists are newest first with cursor pagination (limit default 20, max 100; offset mode when offset is sent).',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: { schemas: { Problem: problemSchema }, securitySchemes },
  };
}
