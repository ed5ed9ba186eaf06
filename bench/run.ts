// `pnpm bench`: Hookline's four services as separate processes, a local receiver, a load
// generator, then the same measurements on three baselines; a table and a JSON report.
import { ALL_PHASES, ALL_SYSTEMS, parseBenchOptions, type BenchOptions } from './lib/bench-options';
import { startAfternoon, startBare, startFloor, AFTERNOON_CONCURRENCY, type RunningSut } from './lib/baselines';
import { stopAll } from './lib/children';
import { BacklogSampler } from './lib/backlog-sampler';
import { startHelper } from './lib/helper';
import { startHookline } from './lib/hookline-sut';
import { topStatements } from './lib/pg-statements';
import { startPrivatePostgres, type PrivatePostgres } from './lib/private-postgres';
import { startPrivateRedis, type PrivateRedis } from './lib/private-redis';
import { effectiveServiceConfig, machineInfo, redact } from './lib/machine';
import { Monitor } from './lib/monitor';
import { e2ePhase, ingestAlonePhase, ingestPhase, latencyPhase, type PhaseCtx } from './lib/phases';
import { ProcSampler, resetHighWaterMark } from './lib/proc-sampler';
import { poolsOf, QueueSampler } from './lib/queue-sampler';
import { computeRatios, computeTargets, emptySystem, peakSourceOf, printSummary, writeReport, type BenchReport, type SystemResults } from './lib/report';
import { SERVICES } from './lib/stack';

type IpcHelper = Awaited<ReturnType<typeof startHelper<{ port: number }>>>;

/** Runs the chosen phases against one system and fills `into`. */
async function measure(sut: RunningSut, into: SystemResults, o: BenchOptions, rx: IpcHelper, procs: ProcSampler, queues: QueueSampler | null, backlog: BacklogSampler | null = null): Promise<void> {
  const monitor = new Monitor(rx.ipc, procs, queues, backlog);
  const ctx: PhaseCtx = { sut, monitor, receiver: rx.ipc, procs, payloadBytes: o.payloadBytes, drainTimeoutMs: o.drainTimeoutMs, saturationMax: o.saturationMax, history: [] };
  monitor.start();
  // The system's whole measurement (every phase and drain): its peaks are the kernel's
  // high-water marks since here, each phase's window resetting them only after reading them.
  const whole = procs.window();
  try {
    if (o.phases.includes('ingest') || !sut.delivers) into.ingest = await ingestPhase(ctx, o.fanouts[0] ?? 1, o.connections, o.saturationMs);
    if (!sut.delivers) return;
    if (o.phases.includes('e2e')) for (const f of o.fanouts) into.e2e[`f${f}`] = await e2ePhase(ctx, f, o.e2eConnections, o.durationMs, o.maxLag);
    if (o.phases.includes('latency'))
      for (const rate of o.rates)
        for (const f of o.fanouts) (into.latency[String(rate)] ??= {})[`f${f}`] = await latencyPhase(ctx, rate, f, o.latencyMs, o.latencyWarmupMs);
    // Last: its backlog (several times the saturated phase's) would weigh on the phases after it.
    if (o.phases.includes('ingest-alone') && sut.pauseDownstream) into.ingestAlone = await ingestAlonePhase(ctx, o.fanouts[0] ?? 1, o.connections, o.saturationMs);
  } finally {
    const all = whole.end();
    monitor.stop();
    into.processes = Object.fromEntries(Object.entries(all).filter(([n]) => sut.processes.includes(n)));
    const servers = Object.fromEntries(Object.entries(all).filter(([n]) => n === 'postgres' || n === 'redis'));
    if (Object.keys(servers).length) into.servers = servers;
    into.totalPeakRssMb = Object.values(into.processes).reduce((a, p) => a + p.peakRssMb, 0);
    const from = peakSourceOf(into.processes);
    if (from) into.peakRssFrom = from;
  }
}

async function main(): Promise<void> {
  const o = parseBenchOptions(process.argv.slice(2));
  let servers: { pg: PrivatePostgres; redis: PrivateRedis } | null = null;
  const startedAt = new Date().toISOString();
  const destinationConfig = { max_concurrency: 64 };
  const report: BenchReport = {
    kind: 'hookline-bench',
    startedAt,
    finishedAt: '',
    machine: machineInfo(),
    config: {
      ...o,
      serviceEnv: redact(o.serviceEnv),
      phasesAvailable: ALL_PHASES,
      systemsAvailable: ALL_SYSTEMS,
      payloadBytes: o.payloadBytes,
      destinationConfig,
      afternoonWorkerConcurrency: AFTERNOON_CONCURRENCY,
      generators: { saturation: 'autocannon 8 (closed loop)', e2e: 'undici Pool closed loop gated by max-lag', latency: 'undici Pool, open loop on a 1 ms clock' },
      // The receiver and the baselines run as Hookline's services do (--runtime), with the V8 flags of the bench's own env.
      helpers: { runtime: o.runtime === 'bundle' ? 'esbuild bundle via scripts/launch.cjs on plain node' : 'node --import tsx', nodeOptions: process.env.NODE_OPTIONS ?? '' },
      peakRss: resetHighWaterMark(process.pid)
        ? 'VmHWM, reset at the start of each phase and of each system (echo 5 > /proc/<pid>/clear_refs)'
        : 'largest once-a-second sample of VmRSS (clear_refs refused)',
      e2eWindow: 'deliveries/s is the mean after a warm-up of 20 % of --duration (10 s at most), to the end of the sending',
      openWorkSampling: 'PostgreSQL every 2 s (doubled while a count is slow), counts capped at 250,000',
    },
    hookline: emptySystem(),
    baselines: { bare: emptySystem(), afternoon: emptySystem(), floor: emptySystem() },
    ratios: {},
    ratioCaveats: {},
    targets: [],
  };
  if (o.privateServers) {
    process.stderr.write('starting a private PostgreSQL (pg_stat_statements) and redis-server…\n');
    servers = { pg: await startPrivatePostgres({ database: 'bench', statStatements: true }), redis: await startPrivateRedis() };
    o.databaseUrl = servers.pg.url;
    o.redisUrl = servers.redis.url;
  }
  const rx = await startHelper<{ port: number }>('receiver', 'bench/procs/bench-receiver.main.ts', {}, 60_000, o.runtime);
  const rxUrl = `http://127.0.0.1:${rx.hello.port}`;
  let current: RunningSut | null = null;
  const procs = new ProcSampler(() => ({ generator: process.pid, receiver: rx.child.pid, ...(servers ? { postgres: servers.pg.pids(), redis: servers.redis.pid() } : {}), ...(current?.pids() ?? {}) }));

  if (o.systems.includes('hookline')) {
    process.stderr.write('starting Hookline (migrations, api, ingest, router, deliverer)…\n');
    const h = await startHookline({ databaseUrl: o.databaseUrl, redisUrl: o.redisUrl, env: o.serviceEnv, cpuProfDir: o.cpuProfDir, shipped: o.runtime === 'bundle', receiverUrl: rxUrl, fanouts: o.fanouts, destinationConfig });
    current = h;
    report.config['stackEnv'] = redact(h.stack.env);
    report.config['services'] = effectiveServiceConfig(SERVICES, h.stack.env);
    const pools = poolsOf(h.stack.env);
    if (pools.length) report.config['workerPools'] = pools;
    const queues = new QueueSampler(o.redisUrl, h.stack.prefix, pools);
    const backlog = new BacklogSampler(h.stack.url);
    try {
      await measure(h, report.hookline, o, rx, procs, queues, backlog);
      report.hookline.queueDepths = queues.samples;
      report.hookline.openWork = backlog.samples;
      if (servers) report.hookline.pgTopStatements = await topStatements(h.stack.url).catch(() => undefined);
    } finally {
      await queues.close();
      await backlog.close();
      await h.close();
      current = null;
    }
  }
  if (o.systems.includes('afternoon')) {
    process.stderr.write('\nstarting baseline (b): express + BullMQ + got…\n');
    current = await startAfternoon(o.redisUrl, rxUrl, o.fanouts, o.runtime);
    try {
      await measure(current, report.baselines.afternoon, o, rx, procs, null);
    } finally {
      await current.close();
      current = null;
    }
  }
  if (o.systems.includes('floor')) {
    process.stderr.write('\nstarting baseline (c): the durable floor (node:http, group-commit INSERT, BullMQ, undici)…\n');
    current = await startFloor(o.databaseUrl, o.redisUrl, rxUrl, o.fanouts, o.runtime);
    try {
      await measure(current, (report.baselines.floor ??= emptySystem()), o, rx, procs, null);
    } finally {
      await current.close();
      current = null;
    }
  }
  if (o.systems.includes('bare')) {
    process.stderr.write('\nstarting baseline (a): bare node:http…\n');
    current = await startBare(o.runtime);
    try {
      await measure(current, report.baselines.bare, o, rx, procs, null);
    } finally {
      await current.close();
      current = null;
    }
  }
  report.finishedAt = new Date().toISOString();
  const { ratios, caveats } = computeRatios(report);
  report.ratios = ratios;
  report.ratioCaveats = caveats;
  report.targets = computeTargets(report);
  printSummary(report);
  const file = writeReport(report, o.out);
  console.log(`\nJSON: ${file}`);
  await rx.child.kill();
  await servers?.pg.close();
  await servers?.redis.close();
}

main().then(
  () => process.exit(0),
  async (err: Error) => {
    console.error(`bench failed: ${err.stack ?? err.message}`);
    await stopAll();
    process.exit(1);
  },
);
