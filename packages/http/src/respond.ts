import type { IncomingMessage, ServerResponse } from 'node:http';
import { toProblem } from '@hookline/errors';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

/** Answers any error as RFC 9457 problem details carrying the request id. */
export function sendProblem(res: ServerResponse, err: unknown, reqId: string): void {
  const { problem, headers } = toProblem(err, reqId);
  const data = JSON.stringify(problem);
  res.writeHead(problem.status, { 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(data), 'x-request-id': reqId, ...headers });
  res.end(data);
}

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`body exceeds ${limit} bytes`);
  }
}

/** Reads the raw body, refusing (without buffering the rest) once it passes `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}
