import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/**
 * Whether a scrape may read the metrics: always when no token is configured (Prometheus'
 * default: keep the port private), else only with `Authorization: Bearer <token>`
 * (compared in constant time, over digests so that lengths do not show either).
 */
export function metricsAllowed(req: IncomingMessage, token: string): boolean {
  if (!token) return true;
  const given = req.headers.authorization ?? '';
  return timingSafeEqual(digest(given), digest(`Bearer ${token}`));
}

/**
 * Answers a Prometheus scrape with everything in `registry` (text format), or 401 when
 * `token` is set and the request does not carry it.
 */
export async function sendMetrics(registry: Registry, req: IncomingMessage, res: ServerResponse, token = ''): Promise<void> {
  if (!metricsAllowed(req, token)) {
    const body = JSON.stringify({ status: 'unauthorized', detail: 'This /metrics needs Authorization: Bearer <METRICS_TOKEN>.' });
    res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'www-authenticate': 'Bearer realm="metrics"' });
    res.end(body);
    return;
  }
  try {
    const text = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`metrics unavailable: ${(err as Error).message}`);
  }
}
