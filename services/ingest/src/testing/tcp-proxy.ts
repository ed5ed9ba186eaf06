import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Stops relaying bytes but keeps every connection open: the far side "hangs". */
  stall(): void;
  /** Closes the listener and every open connection: the far side "goes away". */
  cut(): Promise<void>;
}

/** A loopback TCP relay to `targetPort`, so a test can take a dependency away mid-run. */
export function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let stalled = false;
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    track(client);
    track(upstream);
    client.on('data', (d: Buffer) => void (stalled || upstream.write(d)));
    upstream.on('data', (d: Buffer) => void (stalled || client.write(d)));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      resolve({
        port: typeof addr === 'object' && addr ? addr.port : 0,
        stall: () => void (stalled = true),
        cut: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      });
    });
  });
}
