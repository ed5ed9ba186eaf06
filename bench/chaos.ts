// `pnpm chaos`: the stack on a private Redis and PostgreSQL, a provider that retries, flaky
// receivers, and a schedule of kill -9s and restarts; then a check that nothing
// acknowledged was lost. Exits 1 on any loss.
import { ApiClient, type HookSetup } from './lib/api-client';
import { stopAll } from './lib/children';
import { startHelper } from './lib/helper';
import { machineInfo, redact } from './lib/machine';
import { writeReport } from './lib/report';
import { startStack } from './lib/stack';
import { runChaosLoad, type Outage } from './chaos/chaos-load';
import { parseChaosOptions } from './chaos/chaos-options';
import { planFaults, runFaults } from './chaos/faults';
import { startPrivatePostgres, type PrivatePostgres } from './lib/private-postgres';
import { startPrivateRedis } from './lib/private-redis';
import { waitQuiescent } from './chaos/quiescence';
import { verify } from './chaos/verify';
import type { DeliveryRecord } from './procs/chaos-receiver.main';

const log = (m: string): void => void process.stderr.write(`${m}\n`);

async function main(): Promise<number> {
  const o = parseChaosOptions(process.argv.slice(2));
  const startedAt = new Date().toISOString();
  const runId = `chaos-${Date.now().toString(36)}`;
  log('starting a private redis-server and PostgreSQL cluster…');
  const redis = await startPrivateRedis();
  let pg: PrivatePostgres | null = null;
  if (o.privatePostgres) {
    pg = await startPrivatePostgres().catch((err: Error) => {
      log(`! no private PostgreSQL (${err.message.split('\n')[0]}): using the shared one, without the PostgreSQL fault`);
      return null;
    });
  }
  const env = {
    RETRY_SCHEDULE_MS: '200,400,800,1600',
    RECOVERY_AFTER_MS: '2000',
    RECOVERY_INTERVAL_MS: '1000',
    // Long enough that a busy deliverer keeps its claims (a lease that runs out while the
    // request is still out means a duplicate), short enough that a killed one's claims come
    // back within the run.
    DELIVERY_LEASE_MS: '30000',
    ...o.serviceEnv,
  };
  log('starting Hookline (as shipped: the bundles of `pnpm build`)…');
  const stack = await startStack({ label: 'chaos', databaseUrl: pg?.url ?? o.sharedDatabaseUrl, redisUrl: redis.url, env, shipped: true });
  const rx = await startHelper<{ port: number }>('chaos-receiver', 'bench/procs/chaos-receiver.main.ts', { CHAOS_FAIL_RATE: String(o.failRate), CHAOS_SLOW_MS: String(o.timeoutMs * 2) });
  const api = await ApiClient.forNewTenant(stack.apiUrl, stack.pool);
  const hooks: HookSetup[] = [];
  for (const [k, f] of o.fanouts.entries()) {
    hooks.push(await api.hook(`chaos-h${k}`, Array.from({ length: f }, (_, i) => `http://127.0.0.1:${rx.hello.port}/h${k}/d${i + 1}`), { timeout_ms: o.timeoutMs }));
  }
  const sendMs = (o.events / o.rate) * 1000;
  const faultSpec = pg ? o.faults : o.faults.replace(/(^|,)postgres:\d+/, '');
  const plan = planFaults(faultSpec, sendMs);
  log(`\n${o.events} events at ${o.rate}/s over ${hooks.length} ingesters (fan-out ${o.fanouts.join('/')}), receivers failing ${Math.round(o.failRate * 100)} %`);
  log('fault schedule:');
  for (const f of plan) log(`  t+${(f.atMs / 1000).toFixed(1)} s  ${f.kind === 'redis' ? 'restart Redis empty' : f.kind === 'postgres' ? `stop PostgreSQL for ${o.pgDownMs} ms` : `kill -9 ${f.kind}`}`);

  const outages: Outage[] = [];
  const t0 = Date.now();
  const loadP = runChaosLoad({
    hookUrls: hooks.map((h) => h.hookUrl),
    events: o.events,
    rate: o.rate,
    runId,
    perEventDeadlineMs: o.perEventDeadlineMs,
    pgOutages: () => outages,
    onProgress: (sent, acked, statuses) =>
      void rx.ipc.call<{ requests: number }>('summary').then((s) => log(`  [t+${Math.round((Date.now() - t0) / 1000)} s] sent ${sent}, acknowledged ${acked}, receiver requests ${s.requests}; answers ${JSON.stringify(statuses)}`)).catch(() => undefined),
  });
  const faultLogs = await runFaults({ stack, redis, pg, pgDownMs: o.pgDownMs, outages, log }, plan, t0);
  const load = await loadP;
  log(`load done: ${load.acked.size} acknowledged, ${load.unacked.length} not, ${load.attempts} requests; answers ${JSON.stringify(load.statuses)}`);
  log('waiting for quiescence…');
  const quiet = await waitQuiescent(stack.pool, async () => (await rx.ipc.call<{ requests: number }>('summary')).requests, o.settleTimeoutMs, log);
  const dump = await rx.ipc.call<{ requests: number; records: Array<[string, DeliveryRecord]> }>('dump', undefined, 120_000);
  // A batch's outcomes are recorded within a few timeouts of its sends.
  const verdict = await verify(stack.pool, api, hooks, load, dump, runId, faultLogs, 5000 + 10 * o.timeoutMs);
  const pass = verdict.pass && quiet.quiescent;
  const report = {
    kind: 'hookline-chaos',
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    config: { ...o, serviceEnv: redact(o.serviceEnv), stackEnv: redact(stack.env), privatePostgres: !!pg, privateRedis: true, destinationConfig: { timeout_ms: o.timeoutMs }, receiverSlowMs: o.timeoutMs * 2 },
    faults: faultLogs,
    load: { acknowledged: load.acked.size, unacknowledged: load.unacked.length, requests: load.attempts, statuses: load.statuses, sendSeconds: load.sendSeconds, okWhilePgDown: load.okWhilePgDown.slice(0, 20), pgOutages: outages },
    quiescence: quiet,
    verdict: { ...verdict, pass },
  };
  const file = writeReport(report, o.out, 'chaos-');
  log(`\n=== pnpm chaos verdict: ${pass ? 'PASS' : 'FAIL'} ===`);
  log(`acknowledged ${verdict.acknowledgedEvents} events -> ${verdict.expectedDeliveries} deliveries expected: ${verdict.delivered} delivered, ${verdict.inDlq} exhausted in the DLQ, ${verdict.lost} LOST`);
  log(`delivered but never acknowledged ${verdict.deliveredNotAcknowledged}, unknown delivery keys ${verdict.phantomDeliveries}, acknowledged events missing in the DB ${verdict.ackedEventsMissingInDb}`);
  log(`duplicates ${verdict.duplicateDeliveries} (${verdict.duplicateRatePct} %, goal < 0.5 %: ${verdict.duplicatesGoalMet ? 'met' : 'MISSED'}), plus ${verdict.lateProcessedDuplicates} after a timed-out attempt`);
  if (verdict.duplicateDeliveries) log(`duplicates by the fault just after their first 200: ${JSON.stringify(verdict.duplicatesByFault)}`);
  log(`2xx from ingest while PostgreSQL was down: ${verdict.okWhilePgDown}; quiescent: ${quiet.quiescent} after ${Math.round(quiet.waitedMs / 1000)} s; DLQ via API matches DB: ${verdict.dlqApiMatchesDb}`);
  if (verdict.lostSamples.length) log(`lost (first ${verdict.lostSamples.length}): ${JSON.stringify(verdict.lostSamples, null, 1)}`);
  console.log(JSON.stringify({ verdict: report.verdict, quiescence: quiet, faults: faultLogs.length, json: file }));
  log(`JSON: ${file}`);
  await rx.child.kill();
  // A failed run on the shared PostgreSQL keeps its schema for inspection.
  if (!pass && !pg) log(`kept schema ${stack.schema} and prefix ${stack.prefix} for inspection`);
  await stack.close({ keepData: !pass && !pg });
  await pg?.close();
  await redis.close();
  return pass ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  async (err: Error) => {
    console.error(`chaos failed: ${err.stack ?? err.message}`);
    await stopAll();
    process.exit(2);
  },
);
