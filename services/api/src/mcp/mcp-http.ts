import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type * as z from 'zod';
import { AppError, toProblem, type ErrorType, type ProblemDetails } from '@hookline/errors';
import { requestId } from '@hookline/http';
import type { Logger } from '@hookline/logger';
import { errorMiddleware } from '../http/error.middleware';
import { assertStorableRequest } from '../http/storable-request';

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

/**
 * What PostgreSQL cannot store (U+0000 in the path, the query or the parsed body; a body
 * nested past MAX_BODY_DEPTH) is a 400 validation-error problem before anything else runs,
 * the credential lookup included, as on every control-API route (http/route.ts). Mounted
 * after the body parser, before every MCP route: a JSON-RPC message with a NUL anywhere in
 * it (a tool argument the tool would drop included) is refused whole, as the transport
 * refuses a malformed one.
 */
export const storableRequest: RequestHandler = (req, _res, next) => {
  assertStorableRequest(req);
  next();
};

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

/** The catalog type of a transport refusal's status; the others (406) get a type of their own. */
const TRANSPORT_TYPES: Partial<Record<number, ErrorType>> = {
  400: 'validation-error',
  404: 'not-found',
  409: 'conflict',
  413: 'payload-too-large',
  415: 'unsupported-media-type',
  500: 'internal-error',
};

/**
 * A refusal of the MCP transport as problem details: its status, its message as the detail
 * (a 400 also as `errors`, on the header or the body it is about). A status the shared
 * catalog has no type for (406: Accept lacks application/json or text/event-stream) gets
 * one named after the status, under the same errors base, so every error still has a type,
 * title, status, detail and instance.
 */
function transportProblem(status: number, message: string, id: string): ProblemDetails {
  const type = TRANSPORT_TYPES[status];
  if (type) {
    const field = /protocol version/i.test(message) ? 'MCP-Protocol-Version' : 'body';
    const extras = type === 'validation-error' ? { errors: [{ field, message }] } : {};
    return toProblem(new AppError(type, message, extras), id).problem;
  }
  const title = STATUS_CODES[status] ?? 'Error';
  const base = toProblem(new AppError('not-found', ''), id).problem.type.replace(/\/not-found$/, '');
  return { type: `${base}/${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`, title, status, detail: message, instance: id };
}

type Callback = (err?: Error | null) => void;
const callbackOf = (args: unknown[]): Callback | undefined => args.find((a): a is Callback => typeof a === 'function');

/**
 * For one `transport.handleRequest`: what the MCP SDK's transport refuses itself (406 Accept,
 * 415 Content-Type, 400 malformed JSON-RPC or batch, an unsupported MCP-Protocol-Version,
 * …), which it writes as a bare JSON-RPC error (id null) without the request id, is answered
 * instead as problem details with `instance` the request id, as every other error of the
 * api (transportProblem). Only responses of status 400 and above are taken over; the
 * transport answers a valid request 200 (JSON-RPC results and errors alike) or 202, which
 * pass through untouched. Returns what removes it (it removes itself once it answered).
 */
export function transportErrorsAsProblems(res: Response): () => void {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end };
  let failed: number | null = null;
  const chunks: Buffer[] = [];
  const collect = (chunk: unknown): void => {
    if (typeof chunk === 'string') chunks.push(Buffer.from(chunk));
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
  };
  // A status set without writeHead (res.statusCode) counts too, as long as nothing was sent.
  const failing = (): boolean => {
    if (failed === null && !res.headersSent && res.statusCode >= 400) failed = res.statusCode;
    return failed !== null;
  };
  const restore = (): void => {
    res.writeHead = original.writeHead;
    res.write = original.write;
    res.end = original.end;
  };
  res.writeHead = function (this: Response, status: number, ...rest: unknown[]) {
    // Once refused, nothing of the transport's answer reaches the client (not even an implicit header of a flush).
    if (failed !== null || status >= 400) {
      failed ??= status;
      return this;
    }
    return (original.writeHead as (...a: unknown[]) => Response).call(this, status, ...rest);
  } as Response['writeHead'];
  res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
    if (!failing()) return (original.write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    collect(chunk);
    const cb = callbackOf(rest);
    if (cb) process.nextTick(cb);
    return true;
  } as Response['write'];
  res.end = function (this: Response, ...args: unknown[]) {
    if (!failing()) return (original.end as (...a: unknown[]) => Response).apply(this, args);
    if (typeof args[0] !== 'function') collect(args[0]);
    const cb = callbackOf(args);
    if (cb) this.once('finish', cb);
    restore();
    let message = STATUS_CODES[failed!] ?? 'The MCP request was refused.';
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: { message?: unknown } };
      if (typeof body.error?.message === 'string') message = body.error.message;
    } catch {
      // Not a JSON-RPC error body: the status's own phrase.
    }
    return this.status(failed!).type('application/problem+json').json(transportProblem(failed!, message, requestIdOf(this)));
  } as Response['end'];
  return restore;
}
