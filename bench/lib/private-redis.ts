// A redis-server of the chaos run's own, on a free loopback port, without persistence, so
// that "restart Redis with its data gone" never touches the machine's shared Redis.
import { freePort, waitFor } from '@hookline/testing';
import IORedis from 'ioredis';
import { startChild, type Child } from './children';

export interface PrivateRedis {
  url: string;
  pid(): number | undefined;
  /** kill -9, then a fresh empty server on the same port. */
  restartEmpty(downMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: Child | null = null;
  const up = async (): Promise<void> => {
    child = startChild('redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction']);
    await waitFor(async () => {
      if (!child?.alive()) throw new Error(`redis-server exited: ${child?.tail()}`);
      const r = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => undefined);
      try {
        await r.connect();
        return (await r.ping()) === 'PONG';
      } finally {
        r.disconnect();
      }
    }, { timeoutMs: 15_000, what: 'private redis-server' });
  };
  await up();
  return {
    url,
    pid: () => (child?.alive() ? child.pid : undefined),
    async restartEmpty(downMs = 1000) {
      await child?.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, downMs));
      await up();
    },
    async close() {
      await child?.kill('SIGTERM');
    },
  };
}
