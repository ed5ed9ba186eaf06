import { createConnection, createServer, type Server, type Socket } from 'node:net';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export interface RedisProxy {
  /** The target's URL (credentials, db) with the proxy's loopback address instead. */
  url: string;
  port: number;
  /** Client connections open now. */
  connections(): number;
  /**
   * A stalled Redis (hung, overloaded, or a partition without RST): every connection, open
   * or new, stays open (new ones are accepted) but nothing more flows either way.
   */
  stall(): void;
  /** Everything held back flows again, in order (replies arrive late, none is lost). */
  resume(): void;
  close(): Promise<void>;
}

/** One direction of a connection: forwards, or holds chunks in order while stalled. */
function relay(from: Socket, to: Socket, stalled: () => boolean): { flush(): void } {
  const held: Buffer[] = [];
  const flush = (): void => {
    while (held.length > 0 && !to.destroyed) to.write(held.shift()!);
  };
  from.on('data', (chunk: Buffer) => {
    if (stalled() || held.length > 0) held.push(chunk);
    else to.write(chunk);
  });
  return { flush };
}

/**
 * A TCP proxy on 127.0.0.1 in front of the test Redis (loopback only), which a test can
 * switch to "stalled": the sockets stay open but no byte goes through, so a client sees
 * no error, no close, and no reply (what `connectTimeout` and `maxRetriesPerRequest` do
 * not catch). `resume()` lets everything through again.
 */
export async function startRedisProxy(targetUrl = REDIS_URL): Promise<RedisProxy> {
  const target = new URL(targetUrl);
  if (!LOOPBACK.has(target.hostname)) throw new Error(`startRedisProxy only proxies a loopback Redis, not ${target.hostname}`);
  const targetPort = Number(target.port || 6379);
  let stalled = false;
  const pairs = new Set<{ client: Socket; upstream: Socket; flush(): void }>();

  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    const up = relay(client, upstream, () => stalled);
    const down = relay(upstream, client, () => stalled);
    const pair = { client, upstream, flush: () => (up.flush(), down.flush()) };
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    port,
    connections: () => pairs.size,
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const p of pairs) p.flush();
    },
    async close() {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream.destroy();
      }
      pairs.clear();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
