// The three baselines run in the same invocation: (a) a bare node:http server answering 202,
// (b) the afternoon pipeline (express + express.json() -> Queue.add -> Worker -> got), (c) the
// durable floor (node:http -> group-commit INSERT -> 202 -> one job per commit -> undici).
// Each runs as Hookline's services do (`runtime` 'bundle': an esbuild bundle on plain
// node, see helper.ts), so that RSS and CPU compare like for like.
import { randomBytes } from 'node:crypto';
import { flushPrefix } from '@hookline/testing';
import { onInterrupt } from './children';
import { dropRunData } from './run-data';
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

/** The routing table of a baseline: fan-out f posts to `${receiverUrl}/${name}/f{f}/d{i}`, i = 1..f. */
function routesFor(name: string, receiverUrl: string, fanouts: number[]): Record<string, string[]> {
  return Object.fromEntries(fanouts.map((f) => [`f${f}`, Array.from({ length: f }, (_, i) => `${receiverUrl}/${name}/f${f}/d${i + 1}`)]));
}

/** A baseline of two processes: a server taking events at `/in/f{f}` and a worker behind it (stopped by pauseDownstream). */
async function startPipeline(name: string, entries: { server: string; worker: string }, env: Record<string, string>, runtime: HelperRuntime, cleanup: () => Promise<void>): Promise<RunningSut> {
  const helpers: Helper<unknown>[] = [];
  const exits = exitWatch();
  const server = await startHelper<{ port: number }>(`${name}-server`, entries.server, env, 60_000, runtime);
  helpers.push(server);
  exits.watch(server);
  const startWorker = async (): Promise<void> => {
    const w = await startHelper(`${name}-worker`, entries.worker, env, 60_000, runtime);
    exits.watch(w);
    helpers.push(w);
  };
  await startWorker();
  return {
    name,
    hookUrl: (f) => `http://127.0.0.1:${server.hello.port}/in/f${f}`,
    delivers: true,
    processes: [`${name}-server`, `${name}-worker`],
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
      await cleanup();
    },
  };
}

/** Baseline (b): express + express.json() -> Queue.add -> Worker -> got, no persistence. */
export async function startAfternoon(redisUrl: string, receiverUrl: string, fanouts: number[], runtime: HelperRuntime = 'bundle'): Promise<RunningSut> {
  const prefix = `{afternoon-${randomBytes(4).toString('hex')}}`;
  const env = { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, AFTERNOON_ROUTES: JSON.stringify(routesFor('afternoon', receiverUrl, fanouts)), AFTERNOON_CONCURRENCY: String(AFTERNOON_CONCURRENCY) };
  const entries = { server: 'bench/procs/afternoon-server.main.ts', worker: 'bench/procs/afternoon-worker.main.ts' };
  return startPipeline('afternoon', entries, env, runtime, async () => void (await flushPrefix(prefix, redisUrl).catch(() => undefined)));
}

/**
 * Baseline (c), the durable floor: node:http -> one multi-row INSERT per group commit ->
 * 202 after COMMIT -> one BullMQ job of ids per commit -> a Worker that reads the rows,
 * POSTs them with undici and marks them delivered in one UPDATE. What any design that
 * acknowledges only what PostgreSQL holds must at least do, in its own schema.
 */
export async function startFloor(databaseUrl: string, redisUrl: string, receiverUrl: string, fanouts: number[], runtime: HelperRuntime = 'bundle'): Promise<RunningSut> {
  const tag = randomBytes(4).toString('hex');
  const prefix = `{floor-${tag}}`;
  const schema = `bench_floor_${tag}`;
  const env = { DATABASE_URL: databaseUrl, FLOOR_SCHEMA: schema, REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, FLOOR_ROUTES: JSON.stringify(routesFor('floor', receiverUrl, fanouts)) };
  const entries = { server: 'bench/procs/floor-server.main.ts', worker: 'bench/procs/floor-worker.main.ts' };
  const dropData = (): Promise<void> => dropRunData(databaseUrl, schema, redisUrl, prefix);
  const unhook = onInterrupt(dropData);
  return startPipeline('floor', entries, env, runtime, async () => {
    unhook();
    await dropData().catch(() => undefined);
  });
}
