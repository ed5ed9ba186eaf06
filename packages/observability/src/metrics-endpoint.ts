import type { ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

/** Answers a Prometheus scrape with everything in `registry` (text format). */
export async function sendMetrics(registry: Registry, res: ServerResponse): Promise<void> {
  try {
    const text = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`metrics unavailable: ${(err as Error).message}`);
  }
}
