import type { Request } from 'express';
import { AppError, type FieldError } from '@hookline/errors';

/** Deeper JSON than this is refused (flow filters allow 32 levels below `filter.match`). */
export const MAX_BODY_DEPTH = 64;

const NUL = 'must not contain NUL characters';

/** NUL characters (keys included) and nesting past MAX_BODY_DEPTH in a parsed body, as field errors. */
function bodyErrors(value: unknown, path: string, out: FieldError[], depth: number): void {
  if (out.length >= 10) return;
  if (typeof value === 'string') {
    if (value.includes('\u0000')) out.push({ field: path || 'body', message: NUL });
    return;
  }
  if (!value || typeof value !== 'object') return;
  if (depth >= MAX_BODY_DEPTH) {
    out.push({ field: path || 'body', message: `is nested deeper than ${MAX_BODY_DEPTH} levels` });
    return;
  }
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const at = path ? `${path}.${k}` : k;
    if (k.includes('\u0000')) out.push({ field: at, message: NUL });
    else bodyErrors(v, at, out, depth + 1);
  }
}

/**
 * What PostgreSQL cannot store or a recursive walk cannot take is refused as a 400 before
 * any handler (or credential lookup) sees it, instead of failing later with a 500: U+0000
 * anywhere in the path, the query or the body (text and jsonb cannot hold it), and bodies
 * nested deeper than MAX_BODY_DEPTH.
 */
export function assertStorableRequest(req: Request): void {
  const errors: FieldError[] = [];
  const q = req.originalUrl.indexOf('?');
  const rawPath = q === -1 ? req.originalUrl : req.originalUrl.slice(0, q);
  if (/%00/.test(rawPath)) errors.push({ field: 'path', message: NUL });
  if (q !== -1 && /%00/.test(req.originalUrl.slice(q))) errors.push({ field: 'query', message: NUL });
  bodyErrors(req.body, '', errors, 0);
  if (errors.length) throw AppError.validation(errors, 'The request contains values that cannot be stored.');
}
