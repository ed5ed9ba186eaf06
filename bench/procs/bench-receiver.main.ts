// The benchmark's destination: bare node:http answering 200, counting deliveries per path
// and the ingest->delivered latency from X-Hookline-Ingested-At (epoch ms set at ingest).
import { createServer } from 'node:http';
import { Histogram } from '../lib/histogram';
import { serveIpc } from '../lib/ipc';

export interface ReceiverStats {
  count: number;
  byPath: Record<string, number>;
  latency: ReturnType<Histogram['summary']>;
  missingTimestamp: number;
}

const hist = new Histogram();
let count = 0;
let missingTimestamp = 0;
let byPath: Record<string, number> = {};

const server = createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    const at = Number(req.headers['x-hookline-ingested-at']);
    if (Number.isFinite(at) && at > 0) hist.record(Date.now() - at);
    else missingTimestamp++;
    count++;
    const path = req.url ?? '/';
    byPath[path] = (byPath[path] ?? 0) + 1;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  serveIpc(
    {
      stats: (): ReceiverStats => ({ count, byPath, latency: hist.summary(), missingTimestamp }),
      count: () => count,
      // Latency is per phase; the count stays cumulative (the monitor's time series).
      reset: () => {
        hist.reset();
        missingTimestamp = 0;
        return true;
      },
    },
    { port: typeof addr === 'object' && addr ? addr.port : 0 },
  );
});
