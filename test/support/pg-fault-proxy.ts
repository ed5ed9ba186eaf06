import { connect, createServer, type Server, type Socket } from 'node:net';

/** What the next request containing the marker meets (one-shot). */
export type PgFault =
  /** Forwarded: PostgreSQL runs (and commits) it, but its reply never reaches the client, whose connection is then closed. */
  | 'lose-reply'
  /** Never forwarded: the client's connection is closed before PostgreSQL sees the request. */
  | 'drop-request';

export interface PgFaultProxy {
  /** A database URL like `url`, through the proxy. */
  url(url: string): string;
  /** Arms `fault` for the next client request (Parse … Sync) whose bytes contain `marker`. */
  arm(fault: PgFault, marker: string): void;
  /** How many armed faults went off. */
  tripped(): number;
  /** Every byte of the requests the faults hit, as latin1 text (the query and its parameters). */
  hitRequests(): string[];
  close(): Promise<void>;
}

const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]); // 'Z', length 5: the server has finished (committed) the request
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]); // 'S', length 4: the end of an extended-protocol request

/**
 * A loopback TCP relay to a test PostgreSQL that loses one chosen request's reply or the
 * request itself, as a network failure or a failover at the wrong moment does: a test
 * simulates a COMMIT whose reply was lost (the server committed, the client sees its
 * connection terminated) or a write that never arrived (nothing committed, same error).
 */
export async function startPgFaultProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<PgFaultProxy> {
  const sockets = new Set<Socket>();
  let armed: { fault: PgFault; marker: string } | null = null;
  let tripped = 0;
  const hits: string[] = [];

  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    const kill = (): void => {
      client.destroy();
      upstream.destroy();
    };
    // This connection's fault, once its request has been seen, and what it has held back so far.
    let fault: PgFault | null = null;
    let held = Buffer.alloc(0);
    client.on('data', (d: Buffer) => {
      if (!fault && armed && d.toString('latin1').includes(armed.marker)) {
        fault = armed.fault;
        armed = null;
        tripped++;
        hits.push('');
      }
      if (fault) hits[hits.length - 1] += d.toString('latin1');
      if (fault === 'drop-request') {
        held = Buffer.concat([held, d]);
        if (held.includes(SYNC)) kill();
        return;
      }
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (fault === 'lose-reply') {
        held = Buffer.concat([held, d]);
        if (held.includes(READY_FOR_QUERY)) kill();
        return;
      }
      client.write(d);
    });
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    arm(fault, marker) {
      armed = { fault, marker };
    },
    tripped: () => tripped,
    hitRequests: () => [...hits],
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
