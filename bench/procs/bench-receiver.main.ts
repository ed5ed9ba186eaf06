// The benchmark's destination: bare node:http answering 200. Every event body the harness
// sends starts with its phase's tag (`{"bench_phase":"<tag>",…`, see load.ts eventBody), and
// both Hookline and the afternoon baseline deliver the body as received: deliveries are
// counted per phase, so that a phase's stragglers never count in the next one, and
// duplicates (a second request with the same X-Service-Delivery-Idempotency-Key) are
// counted apart. Latency (ingest->delivered, from X-Hookline-Ingested-At, epoch ms set at
// ingest) is recorded per phase for each delivery's first arrival.
import { createServer } from 'node:http';
import { Histogram, type LatencySummary } from '../lib/histogram';
import { serveIpc } from '../lib/ipc';
import { phaseTagOf, PhaseTally, type PhaseCounts } from '../lib/receiver-tally';

export interface ReceiverStats extends PhaseCounts {
  latency: LatencySummary;
  missingTimestamp: number;
}

/** Beyond this many keys in one phase, duplicates are no longer told apart (memory bound). */
const MAX_KEYS = Number(process.env.BENCH_RECEIVER_MAX_KEYS ?? 4_000_000);
const HEAD = 256;

const tally = new PhaseTally(MAX_KEYS);
const hists = new Map<string, { hist: Histogram; missingTimestamp: number }>();
const frozen = new Map<string, { latency: LatencySummary; missingTimestamp: number }>();
let total = 0;
let byPath: Record<string, number> = {};

const server = createServer((req, res) => {
  let head = '';
  req.on('data', (c: Buffer) => {
    if (head.length < HEAD) head += c.toString('latin1', 0, Math.min(c.length, HEAD));
  });
  req.on('end', () => {
    total++;
    const path = req.url ?? '/';
    byPath[path] = (byPath[path] ?? 0) + 1;
    const tag = phaseTagOf(head);
    const key = req.headers['x-service-delivery-idempotency-key'];
    const first = tally.record(tag, typeof key === 'string' ? key : undefined);
    if (tag !== null && first) {
      let h = hists.get(tag);
      if (!h && !frozen.has(tag)) hists.set(tag, (h = { hist: new Histogram(), missingTimestamp: 0 }));
      if (h) {
        const at = Number(req.headers['x-hookline-ingested-at']);
        if (Number.isFinite(at) && at > 0) h.hist.record(Date.now() - at);
        else h.missingTimestamp++;
      }
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;

const latencyOf = (tag: string): { latency: LatencySummary; missingTimestamp: number } => {
  const f = frozen.get(tag);
  if (f) return f;
  const h = hists.get(tag);
  return { latency: (h?.hist ?? new Histogram(1)).summary(), missingTimestamp: h?.missingTimestamp ?? 0 };
};

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  serveIpc(
    {
      // Every request, all phases (the monitor's time series and progress line).
      count: () => total,
      // One phase's counts: cheap enough to poll every 100 ms.
      phase: (tag) => tally.counts(String(tag)),
      stats: (tag): ReceiverStats => ({ ...tally.counts(String(tag)), ...latencyOf(String(tag)) }),
      // Requests whose body carried no phase tag, and the count per path (all phases).
      totals: () => ({ total, untagged: tally.untagged, byPath }),
      // The phase is over: keep its counts and latency summary, free its keys and histogram.
      // Its stragglers are still counted (received, and unique without duplicate detection).
      forget: (tag) => {
        const t = String(tag);
        frozen.set(t, latencyOf(t));
        hists.delete(t);
        tally.forget(t);
        return true;
      },
      resetPaths: () => {
        byPath = {};
        return true;
      },
    },
    { port: typeof addr === 'object' && addr ? addr.port : 0 },
  );
});
