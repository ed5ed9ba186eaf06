import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Doc = Record<string, unknown>;
type Operation = { responses?: Record<string, { content?: Record<string, { schema?: Doc }> }> };

export interface ResponseCheck {
  /** Problems with a response, or [] when it conforms; throws for undocumented routes. */
  check(method: string, path: string, status: number, body: unknown): string[];
}

/**
 * Validates real responses against the OpenAPI document (tests run every response of the
 * api suite through it): the route must be documented, the status listed, the body valid.
 */
export function createResponseChecker(doc: Doc): ResponseCheck {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: (doc as { components: unknown }).components }, 'openapi');
  const paths = Object.entries(doc['paths'] as Record<string, Record<string, Operation>>).map(([p, ops]) => ({
    // Literal segments outrank parameters, as in express route order.
    re: new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}$`),
    literal: p.replace(/\{\w+\}/g, '').length,
    ops,
  }));
  paths.sort((a, b) => b.literal - a.literal);
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  return {
    check(method, path, status, body) {
      const pathname = path.split('?')[0]!;
      const m = method.toLowerCase();
      const entry = paths.find((p) => p.re.test(pathname) && p.ops[m]);
      const op = entry?.ops[m];
      if (!entry || !op) throw new Error(`${method} ${pathname} is not in the OpenAPI document`);
      const res = op.responses?.[String(status)];
      if (!res) return [`status ${status} is not documented for ${method} ${pathname}`];
      const media = res.content ? Object.values(res.content)[0] : undefined;
      if (!media?.schema) return body === undefined ? [] : [`${method} ${pathname} ${status} documents no body`];
      const key = `${m} ${entry.re.source} ${status}`;
      let validate = compiled.get(key);
      if (!validate) {
        validate = ajv.compile(JSON.parse(JSON.stringify(media.schema).replace(/"#\/components\//g, '"openapi#/components/')) as Doc);
        compiled.set(key, validate);
      }
      return validate(body) ? [] : (validate.errors ?? []).map((e) => `${method} ${pathname} ${status}: ${e.instancePath || 'body'} ${e.message ?? ''}`);
    },
  };
}
