// The two baselines run in the same invocation: (a) a bare node:http server answering 202,
// (b) the afternoon pipeline (express + express.json() -> Queue.add -> Worker -> got).
// Each runs as Hookline's services do (`runtime` 'bundle': an esbuild bundle on plain
// node, see helper.ts), so that RSS and CPU compare like for like.
import { randomBytes } from 'node:crypto';
import { flushPrefix } from '@hookline/testing';
import { startHelper, type Helper, type HelperRuntime } from './helper';
import type { Sut } from './phases';

export interface RunningSut extends Sut {
  pids(): Record<string, number>;
  close(): Promise<void>;
}

export const AFTERNOON_CONCURRENCY = 50;

/** Counts the exits of helpers that the harness did not ask for (`expect` marks a kill as asked). */
function exitWatch(): { watch(h: Helper<unknown>): void; expect(h: Helper<unknown>): void; count(): number } {
  const asked = new WeakSet<Helper<unknown>>();
  let n = 0;
  return {
    watch: (h) => void h.child.exited.then(() => (asked.has(h) ? undefined : n++)),
    expect: (h) => void asked.add(h),
    count: () => n,
  };
}

export async function startBare(runtime: HelperRuntime = 'bundle'): Promise<RunningSut> {
  const h = await startHelper<{ port: number }>('bare-http', 'bench/procs/bare-http.main.ts', {}, 60_000, runtime);
  const exits = exitWatch();
  exits.watch(h);
  return {
    name: 'bare http',
    hookUrl: () => `http://127.0.0.1:${h.hello.port}/in/bare`,
    delivers: false,
    processes: ['bare-http'],
    pids: () => ({ 'bare-http': h.child.pid }),
    unexpectedExits: exits.count,
    close: async () => {
      exits.expect(h);
      await h.child.kill();
    },
  };
}

/** Fan-out f routes to `${receiverUrl}/afternoon/f{f}/d{i}`, i = 1..f. */
export async function startAfternoon(redisUrl: string, receiverUrl: string, fanouts: number[], runtime: HelperRuntime = 'bundle'): Promise<RunningSut> {
  const prefix = `{afternoon-${randomBytes(4).toString('hex')}}`;
  const routes: Record<string, string[]> = {};
  for (const f of fanouts) routes[`f${f}`] = Array.from({ length: f }, (_, i) => `${receiverUrl}/afternoon/f${f}/d${i + 1}`);
  const env = { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, AFTERNOON_ROUTES: JSON.stringify(routes), AFTERNOON_CONCURRENCY: String(AFTERNOON_CONCURRENCY) };
  const helpers: Helper<unknown>[] = [];
  const exits = exitWatch();
  const server = await startHelper<{ port: number }>('afternoon-server', 'bench/procs/afternoon-server.main.ts', env, 60_000, runtime);
  helpers.push(server);
  exits.watch(server);
  const startWorker = async (): Promise<void> => {
    const w = await startHelper('afternoon-worker', 'bench/procs/afternoon-worker.main.ts', env, 60_000, runtime);
    exits.watch(w);
    helpers.push(w);
  };
  await startWorker();
  return {
    name: 'afternoon',
    hookUrl: (f) => `http://127.0.0.1:${server.hello.port}/in/f${f}`,
    delivers: true,
    processes: ['afternoon-server', 'afternoon-worker'],
    pids: () => Object.fromEntries(helpers.map((h) => [h.child.name, h.child.pid])),
    async pauseDownstream() {
      const workers = helpers.filter((h) => h !== server);
      workers.forEach(exits.expect);
      await Promise.all(workers.map((h) => h.child.kill()));
      helpers.splice(0, helpers.length, server);
      return startWorker;
    },
    unexpectedExits: exits.count,
    close: async () => {
      helpers.forEach(exits.expect);
      await Promise.all(helpers.map((h) => h.child.kill()));
      await flushPrefix(prefix, redisUrl).catch(() => undefined);
    },
  };
}
