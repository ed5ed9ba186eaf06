// The chaos run's destinations (one per path): about 30 % of requests fail, split between
// 500s, answers slower than the destination timeout, and dropped connections. Every
// request is recorded under its X-Service-Delivery-Idempotency-Key with what it carried
// (path, X-Hookline-Event-Id, the generator's sequence number from the body) and what it
// was served, so that the verdict can check each one, not only a key's first.
// A request without the key is answered 400 and counted (`withoutKey`): the verdict fails on it.
import { createServer } from 'node:http';
import { serveIpc } from '../lib/ipc';

/**
 * What the receiver served: a prompt 200 (the only answer the deliverer can take for a
 * success); a 500; `slow`, a 200 written after twice the destination timeout (the deliverer
 * has given up by then: a failure, though the receiver saw the request); `drop`, the
 * connection destroyed without an answer (seen, then failed).
 */
export type Served = 'ok' | 'fail' | 'slow' | 'drop';

/** One request: [path, X-Hookline-Event-Id, seq from the body (-1: unreadable), served, epoch ms]. */
export type ReceivedRequest = [p: string, e: string, s: number, o: Served, t: number];

export interface ReceiverDump {
  requests: number;
  withoutKey: number;
  /** The first few requests without the key: [path, X-Hookline-Event-Id]. */
  withoutKeySamples: Array<[string, string]>;
  /** Every request by idempotency key, in arrival order. */
  records: Array<[string, ReceivedRequest[]]>;
}

const failRate = Number(process.env.CHAOS_FAIL_RATE ?? 0.3);
const slowMs = Number(process.env.CHAOS_SLOW_MS ?? 1000);
const records = new Map<string, ReceivedRequest[]>();
const withoutKeySamples: Array<[string, string]> = [];
let requests = 0;
let withoutKey = 0;

function seqOf(body: Buffer): number {
  try {
    const seq = (JSON.parse(body.toString()) as { seq?: unknown }).seq;
    return typeof seq === 'number' ? seq : -1;
  } catch {
    return -1; // not our body: the verdict reports it
  }
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    requests++;
    const key = req.headers['x-service-delivery-idempotency-key'];
    const eventId = String(req.headers['x-hookline-event-id'] ?? '');
    if (typeof key !== 'string' || key === '') {
      withoutKey++;
      if (withoutKeySamples.length < 20) withoutKeySamples.push([req.url ?? '', eventId]);
      res.writeHead(400).end();
      return;
    }
    const r = Math.random();
    const slice = failRate / 3;
    const served: Served = r < slice ? 'fail' : r < 2 * slice ? 'slow' : r < 3 * slice ? 'drop' : 'ok';
    let list = records.get(key);
    if (!list) records.set(key, (list = []));
    list.push([req.url ?? '', eventId, seqOf(Buffer.concat(chunks)), served, Date.now()]);
    if (served === 'fail') res.writeHead(500, { 'content-type': 'text/plain' }).end('chaos: 500');
    else if (served === 'slow')
      // Past the destination's timeout: the deliverer gives up; the late 200 goes nowhere.
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(200).end('late');
      }, slowMs);
    else if (served === 'drop') req.socket.destroy();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  serveIpc(
    {
      summary: () => ({ requests, withoutKey, keys: records.size }),
      // Entries as arrays: compact enough for tens of thousands over IPC.
      dump: (): ReceiverDump => ({ requests, withoutKey, withoutKeySamples, records: [...records.entries()] }),
    },
    { port: typeof addr === 'object' && addr ? addr.port : 0 },
  );
});
