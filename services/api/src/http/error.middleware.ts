import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '@hookline/errors';
import { scrubText, type Logger } from '@hookline/logger';
import { apiProblem, asServiceError } from './api-problem';

/** body-parser errors carry a `type` (the router's decode errors are URIErrors); map the ones a client causes to the catalog. */
function fromParserError(err: unknown): AppError | null {
  const type = (err as { type?: unknown } | null)?.type;
  if (type === 'entity.parse.failed') return AppError.validation([{ field: 'body', message: 'is not valid JSON' }], 'The request body is not valid JSON.');
  if (type === 'entity.too.large') return new AppError('payload-too-large', 'The request body is too large.');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return new AppError('unsupported-media-type', 'The request body encoding is not supported.');
  // The router decodes path parameters; a malformed %-escape is the client's, not a 500.
  if (err instanceof URIError && (err as URIError & { status?: unknown }).status === 400) return AppError.validation([{ field: 'path', message: 'is not valid percent-encoding' }], 'The request path is not valid percent-encoding.');
  return null;
}

export function sendProblemResponse(res: Response, err: unknown): void {
  const requestId = String(res.locals['requestId'] ?? '');
  const { problem, headers } = apiProblem(err, requestId);
  res.status(problem.status).set(headers).type('application/problem+json').json(problem);
}

/**
 * An unexpected error as logged: its name, code and the first line of its message, scrubbed
 * of quoted credentials; never its full text or stack, which may quote a request or a secret.
 */
function loggedError(err: unknown): Record<string, unknown> {
  const e = err instanceof Error ? err : null;
  const code = (err as { code?: unknown } | null)?.code;
  const firstLine = String(e ? e.message : err).split('\n', 1)[0]!.slice(0, 300);
  return { name: e?.name ?? typeof err, ...(code !== undefined ? { code } : {}), message: scrubText(firstLine) };
}

/** The one error middleware: everything becomes problem details with the request id. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const parsed = fromParserError(err) ?? err;
    const mapped = asServiceError(parsed);
    // The database unreachable: a 503, logged once per request without the driver's text.
    if (mapped !== parsed) logger.warn('database unavailable', { request_id: res.locals['requestId'], method: req.method, path: req.path, code: (err as { code?: unknown } | null)?.code });
    else if (!(mapped instanceof AppError)) {
      logger.error('unhandled error', { request_id: res.locals['requestId'], method: req.method, path: req.path, err: loggedError(err) });
    }
    if (res.headersSent) return;
    sendProblemResponse(res, mapped);
  };
}

export const notFoundMiddleware: RequestHandler = (req, _res, next) => {
  next(new AppError('not-found', `No route for ${req.method} ${req.path}.`));
};
