import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { sendJson } from './respond';

export type ReadinessCheck = () => Promise<Record<string, boolean>>;

/** Extra GET routes of the health server by exact path (e.g. `/metrics`). */
export type ExtraRoutes = Record<string, (res: ServerResponse, req: IncomingMessage) => void | Promise<void>>;

export interface HealthServer {
  server: Server;
  setDraining(): void;
}

/**
 * `/healthz` (the process is alive) and `/readyz` (its dependencies answer and it is not
 * draining), for the worker services, which have no HTTP server of their own.
 */
export function startHealthServer(port: number, host: string, ready: ReadinessCheck, extra: ExtraRoutes = {}): Promise<HealthServer> {
  let draining = false;
  const server = createServer((req, res) => {
    void (async () => {
      if (req.url === '/healthz') return sendJson(res, 200, { status: 'ok' });
      if (req.url === '/readyz') {
        const checks = await ready().catch(() => ({ checks: false }));
        const ok = !draining && Object.values(checks).every(Boolean);
        return sendJson(res, ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', draining, checks });
      }
      const path = (req.url ?? '/').split('?', 1)[0]!;
      if (Object.hasOwn(extra, path)) return extra[path]!(res, req);
      sendJson(res, 404, { status: 'not_found' });
    })();
  });
  // A port in use (or a bad HOST) fails the boot with its reason rather than as an uncaught 'error'.
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve({ server, setDraining: () => (draining = true) });
    });
  });
}
