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
    /**
     * The TLS error behind an undici socket error, if one is seen on that connection (the
     * alert can be emitted just after undici gives up, so this waits up to `waitMs`). A
     * Node server refuses an untrusted client certificate by closing without an alert: with
     * a client certificate configured, a close before any response byte counts as that.
     */
    async alertFor(err: unknown, clientCert: boolean, waitMs = 50): Promise<Error | null> {
      const e = err as { code?: string; socket?: SocketInfo & { bytesRead?: number } } | null;
      const info = e?.socket;
      if (!info || e.code !== 'UND_ERR_SOCKET') return null;
      for (let waited = 0; ; waited += 5) {
        const hit = recent.get(keyOf(info));
        if (hit) return hit.err;
        if (waited >= waitMs) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      if (!clientCert || info.bytesRead !== 0) return null;
      return Object.assign(new Error('the server closed the TLS connection before answering (client certificate refused?)'), { code: 'ERR_TLS_CLOSED_BEFORE_RESPONSE' });
    },
  };
}
