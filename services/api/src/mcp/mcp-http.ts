import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type * as z from 'zod';
import { AppError } from '@hookline/errors';
import { requestId } from '@hookline/http';
import type { Logger } from '@hookline/logger';
import { errorMiddleware } from '../http/error.middleware';

/** The host app's request id when it set one (res.locals.requestId), else one of our own. */
export const ensureRequestId: RequestHandler = (req, res, next) => {
  if (!res.locals['requestId']) {
    const id = requestId(req.headers['x-request-id']);
    res.locals['requestId'] = id;
    res.setHeader('X-Request-Id', id);
  }
  next();
};

export const requestIdOf = (res: Response): string => String(res.locals['requestId']);

/** zod issues as the catalog's validation problem: `errors: [{ field, message }]`. */
export function parseOr400<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw AppError.validation(r.error.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message })));
}

export function param(req: Request, name: string): string {
  return String(req.params[name] ?? '');
}

/**
 * Problem details for everything thrown in the MCP router: the api's own error middleware,
 * so body-parser errors map as they do there (413, 415, 400: the client's fault, not a 500)
 * when the router runs without the api's body parser in front of it.
 */
export function mcpErrorHandler(logger: Logger): ErrorRequestHandler {
  return errorMiddleware(logger);
}
