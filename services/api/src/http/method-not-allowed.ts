import type { RequestHandler } from 'express';
import { AppError } from '@hookline/errors';

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'] as const;

/** `/v1/tenants/{tid}/x` → a RegExp matching as express does (any case, optional trailing slash). */
function pathPattern(openApiPath: string): RegExp {
  const source = openApiPath
    .split(/\{\w+\}/)
    .map((literal) => literal.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${source}/?$`, 'i');
}

/**
 * Runs before the body parser and every route: a path the document lists, called with a
 * method it does not list, is 405 with `Allow` (whatever its body or credentials); an
 * unknown path goes on to the 404 handler.
 * `paths` is the OpenAPI `paths` object (method keys per path; HEAD comes with GET).
 */
export function methodNotAllowed(paths: Record<string, Record<string, unknown>>): RequestHandler {
  // An operation documented without a success answer (the MCP endpoint's GET and DELETE,
  // documented to say that they are 405) is not an allowed method.
  const serves = (op: unknown): boolean => Object.keys((op as { responses?: object } | null)?.responses ?? { default: 1 }).some((code) => !/^[45]/.test(code));
  const known = Object.entries(paths).map(([path, ops]) => ({
    pattern: pathPattern(path),
    methods: Object.entries(ops).filter(([m, op]) => (METHODS as readonly string[]).includes(m) && serves(op)).map(([m]) => m),
  }));
  return (req, _res, next) => {
    const allowed = new Set<string>();
    for (const k of known) if (k.pattern.test(req.path)) k.methods.forEach((m) => allowed.add(m));
    if (allowed.has('get')) allowed.add('head');
    if (allowed.size === 0 || allowed.has(req.method.toLowerCase())) return next();
    const allow = METHODS.filter((m) => allowed.has(m)).map((m) => m.toUpperCase()).join(', ');
    next(new AppError('method-not-allowed', `${req.method} is not allowed here; this path allows ${allow}.`, {}, { Allow: allow }));
  };
}
