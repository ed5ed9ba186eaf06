import type { PublicRoute, RouteDef } from '../http/route';
import { ok } from '../lib/format';
import { buildOpenApi, type ExtraPaths } from './build-openapi';

/** `/v1/openapi.json`, built once from the route list (it documents itself too). */
export function openApiRoutes(routes: () => readonly RouteDef[], extra: ExtraPaths = {}): PublicRoute[] {
  let doc: Record<string, unknown> | null = null;
  return [
    {
      auth: 'none',
      method: 'get',
      path: '/v1/openapi.json',
      operationId: 'openapi.get',
      doc: { summary: 'This OpenAPI 3.1 document', tag: 'Health', response: { type: 'object', required: ['openapi', 'paths'] } },
      handler: async () => ok((doc ??= buildOpenApi(routes(), extra))),
    },
  ];
}
