// `pnpm bench` flags. Every phase is bounded in time; --quick makes each a few seconds.
import { parseArgs } from 'node:util';

export const ALL_PHASES = ['ingest', 'ingest-alone', 'e2e', 'latency'] as const;
export type Phase = (typeof ALL_PHASES)[number];
export const ALL_SYSTEMS = ['hookline', 'afternoon', 'floor', 'bare'] as const;
export type System = (typeof ALL_SYSTEMS)[number];

export interface BenchOptions {
  phases: Phase[];
  systems: System[];
  durationMs: number;
  saturationMs: number;
  /** At most this many requests per saturation phase (null: as many as the duration allows). */
  saturationMax: number | null;
  latencyMs: number;
  /** Unmeasured load at the same rate before each latency phase (JIT, pools, caches warm). */
  latencyWarmupMs: number;
  rates: number[];
  fanouts: number[];
  connections: number;
  e2eConnections: number;
  maxLag: number;
  payloadBytes: number;
  drainTimeoutMs: number;
  out: string | null;
  cpuProfDir: string | null;
  runtime: 'tsx' | 'bundle';
  privateServers: boolean;
  databaseUrl: string;
  redisUrl: string;
  serviceEnv: Record<string, string>;
}

const HELP = `pnpm bench [--quick] [--duration S] [--phases ingest,ingest-alone,e2e,latency] [--systems hookline,afternoon,floor,bare]
  --phases LIST           measurements to run (default all); the bare baseline only has ingest;
                          ingest-alone: ingest at saturation with the workers stopped, then drained
  --systems LIST          Hookline and the baselines (default all): afternoon (express, BullMQ, got, nothing
                          stored), floor (the least a durable pipeline does), bare (node:http answering 202)
  --duration S            end-to-end phase length (default 60; --quick: 4); its figure is the mean
                          after a warm-up of 20 % of it (10 s at most): the table states the window
  --saturation-duration S ingest saturation phase length (default 15; --quick: 3)
  --saturation-max N     at most N requests per saturation phase, which bounds the backlog it leaves
                          for a slow or busy machine to drain (default: no limit)
  --latency-duration S    each constant-rate phase (default 15; --quick: 3)
  --latency-warmup S      unmeasured load at the same rate before each (default 5; --quick: 1; 0: none)
  --rates 1000,5000       offered events/s for the latency phases
  --fanouts 1,5           destinations per event
  --connections N         ingest saturation connections (default 100)
  --e2e-connections N     end-to-end closed-loop connections (default 64)
  --max-lag N             end-to-end: most acknowledged-but-undelivered deliveries (default 20000)
  --payload BYTES         event body size (default 1024)
  --env K=V               extra env for the services (repeatable), e.g. --env DELIVERER_CONCURRENCY=32
  --cpu-prof DIR          write V8 CPU profiles of the services into DIR (read them with bench/profile-summary.ts)
  --private-servers       a private PostgreSQL (with pg_stat_statements) and redis-server for the run,
                          so that their CPU is sampled and the costliest statements reported
  --runtime bundle|tsx    services as shipped: the bundles of pnpm build on plain node (default), or the TypeScript
                          sources via tsx; the receiver and the baselines run the same way
  --out FILE              JSON path (default bench/results/<timestamp>.json)`;

const list = (s: string): number[] => s.split(',').map((x) => Number(x.trim())).filter((n) => Number.isFinite(n) && n > 0);

function fail(message: string): never {
  throw new Error(message);
}

function positive(flag: string, v: string): number {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : fail(`${flag} wants a positive whole number (got "${v}")`);
}

function choose<T extends string>(what: string, given: string | undefined, all: readonly T[]): T[] {
  const picked = (given ?? all.join(',')).split(',').map((p) => p.trim()).filter(Boolean) as T[];
  const bad = picked.filter((p) => !all.includes(p));
  if (bad.length || !picked.length) throw new Error(`unknown ${what}(s) "${given}"; choose from ${all.join(', ')}`);
  return picked;
}

export function parseBenchOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
      duration: { type: 'string' },
      'saturation-duration': { type: 'string' },
      'saturation-max': { type: 'string' },
      'latency-duration': { type: 'string' },
      'latency-warmup': { type: 'string' },
      phases: { type: 'string' },
      systems: { type: 'string' },
      rates: { type: 'string', default: '1000,5000' },
      fanouts: { type: 'string', default: '1,5' },
      connections: { type: 'string', default: '100' },
      'e2e-connections': { type: 'string', default: '64' },
      'max-lag': { type: 'string', default: '20000' },
      payload: { type: 'string', default: '1024' },
      env: { type: 'string', multiple: true, default: [] },
      'cpu-prof': { type: 'string' },
      runtime: { type: 'string', default: 'bundle' },
      'private-servers': { type: 'boolean', default: false },
      out: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    process.exit(0);
  }
  const q = values.quick;
  const seconds = (v: string | undefined, full: number, quick: number): number => Math.max(1, Number(v ?? (q ? quick : full))) * 1000;
  const phases = choose('phase', values.phases, ALL_PHASES);
  const systems = choose('system', values.systems, ALL_SYSTEMS);
  const serviceEnv: Record<string, string> = {};
  for (const kv of values.env) {
    const i = kv.indexOf('=');
    if (i < 1) throw new Error(`--env wants KEY=VALUE (got "${kv}")`);
    serviceEnv[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return {
    phases,
    systems,
    durationMs: seconds(values.duration, 60, 4),
    saturationMs: seconds(values['saturation-duration'], 15, 3),
    saturationMax: values['saturation-max'] === undefined ? null : positive('--saturation-max', values['saturation-max']),
    latencyMs: seconds(values['latency-duration'], 15, 3),
    // 0 means no warm-up (every other duration is at least a second).
    latencyWarmupMs: Number(values['latency-warmup']) === 0 ? 0 : seconds(values['latency-warmup'], 5, 1),
    rates: list(values.rates),
    fanouts: list(values.fanouts),
    connections: Number(values.connections),
    e2eConnections: Number(values['e2e-connections']),
    maxLag: Number(values['max-lag']),
    payloadBytes: Number(values.payload),
    drainTimeoutMs: q ? 45_000 : 180_000,
    out: values.out ?? null,
    cpuProfDir: values['cpu-prof'] ?? null,
    privateServers: values['private-servers'],
    runtime: values.runtime === 'bundle' ? 'bundle' : values.runtime === 'tsx' ? 'tsx' : fail(`--runtime must be tsx or bundle (got "${values.runtime}")`),
    databaseUrl: process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
    redisUrl: process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    serviceEnv,
  };
}
