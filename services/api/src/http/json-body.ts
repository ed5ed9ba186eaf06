import type { Request } from 'express';
import { AppError } from '@hookline/errors';

/** The one body type the api parses (app.ts hands it to express.json). */
export const JSON_MEDIA_TYPE = 'application/json';

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * For routes that take a JSON body: a body sent as anything but application/json (or with
 * no Content-Type) is 415, not a 400 about a missing body it never parsed. No body at all
 * is left to the schema, as before.
 */
export function assertJsonBody(req: Request): void {
  if (!hasBody(req) || req.is(JSON_MEDIA_TYPE)) return;
  throw new AppError('unsupported-media-type', `This route takes a JSON body: send it with Content-Type: ${JSON_MEDIA_TYPE}.`);
}
