import type { RequestHandler } from 'express';
import { AppError } from '@hookline/errors';

/** The methods a path can allow, in the order `Allow` lists them. */
const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'] as const;

/** `/v1/tenants/{tid}/x` → a RegExp matching as express does (any case, optional trailing slash). */
function pathPattern(openApiPath: string): RegExp {
  const source = openApiPath
    .split(/\{\w+\}/)
    .map((literal) => literal.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${source}/?$`, 'i');
}

/**
 * Runs before the body parser and every route, and answers from the OpenAPI document alone
 * (whatever the body or credentials) for a path it lists: OPTIONS is 204 with `Allow`
 * (RFC 9110 §9.3.7; no CORS headers: the api serves no CORS), a method it does not list is
 * 405 with the same `Allow`. An unknown path goes on to the 404 handler, OPTIONS included.
 * `paths` is the OpenAPI `paths` object (method keys per path). HEAD comes with GET (express
 * answers HEAD with the GET route, a test holds it to that); OPTIONS with every known path.
 */
export function methodNotAllowed(paths: Record<string, Record<string, unknown>>): RequestHandler {
  // An operation documented without a success answer (the MCP endpoint's GET and DELETE,
  // documented to say that they are 405) is not an allowed method.
  const serves = (op: unknown): boolean => Object.keys((op as { responses?: object } | null)?.responses ?? { default: 1 }).some((code) => !/^[45]/.test(code));
  const known = Object.entries(paths).map(([path, ops]) => ({
    pattern: pathPattern(path),
    methods: Object.entries(ops).filter(([m, op]) => (METHODS as readonly string[]).includes(m) && serves(op)).map(([m]) => m),
  }));
  return (req, res, next) => {
    const allowed = new Set<string>();
    for (const k of known) if (k.pattern.test(req.path)) k.methods.forEach((m) => allowed.add(m));
    if (allowed.size === 0) return next();
    if (allowed.has('get')) allowed.add('head');
    allowed.add('options');
    const method = req.method.toLowerCase();
    if (method !== 'options' && allowed.has(method)) return next();
    const allow = METHODS.filter((m) => allowed.has(m)).map((m) => m.toUpperCase()).join(', ');
    if (method === 'options') {
      res.status(204).setHeader('Allow', allow);
      res.end();
      return;
    }
    next(new AppError('method-not-allowed', `${req.method} is not allowed here; this path allows ${allow}.`, {}, { Allow: allow }));
  };
}
