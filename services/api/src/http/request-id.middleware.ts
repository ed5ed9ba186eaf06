import type { RequestHandler } from 'express';
import { requestId } from '@hookline/http';

/** Takes the caller's `X-Request-Id` when sane (else mints one) and echoes it back. */
export const requestIdMiddleware: RequestHandler = (req, res, next) => {
  const id = requestId(req.headers['x-request-id']);
  res.locals['requestId'] = id;
  res.setHeader('X-Request-Id', id);
  next();
};
