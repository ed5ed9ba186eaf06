import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, toProblem } from '@hookline/errors';
import type { Logger } from '@hookline/logger';

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
  const { problem, headers } = toProblem(err, requestId);
  res.status(problem.status).set(headers).type('application/problem+json').json(problem);
}

/** The one error middleware: everything becomes problem details with the request id. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const mapped = fromParserError(err) ?? err;
    if (!(mapped instanceof AppError)) {
      logger.error('unhandled error', { request_id: res.locals['requestId'], method: req.method, path: req.path, err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) });
    }
    if (res.headersSent) return;
    sendProblemResponse(res, mapped);
  };
}

export const notFoundMiddleware: RequestHandler = (req, _res, next) => {
  next(new AppError('not-found', `No route for ${req.method} ${req.path}.`));
};
