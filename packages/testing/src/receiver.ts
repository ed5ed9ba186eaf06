import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  at: number;
  /** When the answer was written (unset while the request is still open, or when destroyed). */
  answeredAt?: number;
}

/**
 * Decides the answer to the n-th request (1-based); default 200. `delayMs` holds the answer
 * that long; `hold` holds it until the promise settles (the test decides when).
 */
export type ReceiverBehaviour = (n: number, req: ReceivedRequest) => { status: number; body?: string; headers?: Record<string, string>; delayMs?: number; hold?: Promise<unknown>; destroy?: boolean };

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  setBehaviour(b: ReceiverBehaviour): void;
  close(): Promise<void>;
}

/** A local HTTP receiver on loopback that records every request it gets. */
export function startReceiver(behaviour: ReceiverBehaviour = () => ({ status: 200, body: 'ok' })): Promise<Receiver> {
  let current = behaviour;
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: ReceivedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      requests.push(rec);
      const answer = current(requests.length, rec);
      const respond = (): void => {
        if (answer.destroy) {
          req.socket.destroy();
          return;
        }
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
        rec.answeredAt = Date.now();
      };
      if (answer.hold) answer.hold.then(respond, respond);
      else if (answer.delayMs) setTimeout(respond, answer.delayMs);
      else respond();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolve({
        url: `http://127.0.0.1:${port}`,
        port,
        requests,
        setBehaviour: (b) => (current = b),
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}
