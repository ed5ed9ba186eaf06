import type { Socket } from 'node:net';
import { buildConnector } from 'undici';

interface SocketInfo {
  localAddress?: string;
  localPort?: number;
}

/**
 * In TLS 1.3 a server that refuses the client certificate says so with an alert after the
 * handshake; undici then reports only "other side closed". This remembers TLS errors per
 * connection (local address and port) so that such a failure is classified as `tls`.
 */
export function createTlsAlertTracker(keepMs = 10_000) {
  const recent = new Map<string, { err: Error; at: number }>();
  const keyOf = (s: SocketInfo): string => `${s.localAddress ?? ''}:${s.localPort ?? ''}`;

  return {
    /** undici's connector, with every socket watched for TLS errors. */
    connector(options: buildConnector.BuildOptions): buildConnector.connector {
      const base = buildConnector(options);
      return (opts, callback) =>
        base(opts, (...args) => {
          const socket = args[1] as Socket | null;
          if (socket) {
            const key = keyOf(socket);
            socket.on('error', (err: NodeJS.ErrnoException) => {
              if (!/^ERR_(SSL|TLS)_/.test(err.code ?? '')) return;
              const now = Date.now();
              for (const [k, v] of recent) if (now - v.at > keepMs) recent.delete(k);
              recent.set(key, { err, at: now });
            });
          }
          callback(...args);
        });
    },
    /** The TLS error behind an undici socket error, if one was seen on that connection. */
    alertFor(err: unknown): Error | null {
      const info = (err as { socket?: SocketInfo } | null)?.socket; console.log("ALERT", info, [...recent.keys()], err);
      return info ? (recent.get(keyOf(info))?.err ?? null) : null;
    },
  };
}
