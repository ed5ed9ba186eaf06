// The chaos run's destinations (one per path): about 30 % of requests fail, split between
// 500s, answers slower than the destination timeout, and dropped connections. Every
// request is recorded by X-Service-Delivery-Idempotency-Key, so the harness can tell
// delivered, duplicated and never-seen deliveries apart.
import { createServer } from 'node:http';
import { serveIpc } from '../lib/ipc';

export interface DeliveryRecord {
  /** Path = destination. */
  p: string;
  /** X-Hookline-Event-Id, and the generator's sequence number read from the body. */
  e: string;
  s: number;
  /** Prompt 200s (successes the deliverer saw), failures answered, late 200s, dropped. */
  ok: number;
  fail: number;
  late: number;
  drop: number;
  /** When each prompt 200 was given (epoch ms): a second one is a duplicate. */
  okAt: number[];
}

const failRate = Number(process.env.CHAOS_FAIL_RATE ?? 0.3);
const slowMs = Number(process.env.CHAOS_SLOW_MS ?? 1000);
const records = new Map<string, DeliveryRecord>();
let requests = 0;
let withoutKey = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    requests++;
    const key = req.headers['x-service-delivery-idempotency-key'];
    if (typeof key !== 'string') {
      withoutKey++;
      res.writeHead(400).end();
      return;
    }
    let rec = records.get(key);
    if (!rec) {
      let seq = -1;
      try {
        seq = Number((JSON.parse(Buffer.concat(chunks).toString()) as { seq?: number }).seq ?? -1);
      } catch {
        // not our body: seq stays -1 and the harness reports it
      }
      rec = { p: req.url ?? '', e: String(req.headers['x-hookline-event-id'] ?? ''), s: seq, ok: 0, fail: 0, late: 0, drop: 0, okAt: [] };
      records.set(key, rec);
    }
    const r = Math.random();
    const slice = failRate / 3;
    if (r < slice) {
      rec.fail++;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('chaos: 500');
    } else if (r < 2 * slice) {
      rec.late++;
      // Past the destination's timeout: the deliverer gives up; the late 200 goes nowhere.
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(200).end('late');
      }, slowMs);
    } else if (r < 3 * slice) {
      rec.drop++;
      req.socket.destroy();
    } else {
      rec.ok++;
      rec.okAt.push(Date.now());
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  serveIpc(
    {
      summary: () => ({ requests, withoutKey, keys: records.size }),
      // Entries as arrays: compact enough for tens of thousands over IPC.
      dump: () => ({ requests, withoutKey, records: [...records.entries()] }),
    },
    { port: typeof addr === 'object' && addr ? addr.port : 0 },
  );
});
