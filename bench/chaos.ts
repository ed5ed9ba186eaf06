// `pnpm chaos`: the stack on a private Redis and PostgreSQL, a provider that retries, flaky
// receivers, and a schedule of kill -9s and restarts; then a check that nothing
// acknowledged was lost (chaos/verify.ts). Exits 0 on PASS, 1 on FAIL (any loss or other
// failed check), 3 when INCOMPLETE (every check passed, but a planned fault did not happen
// or none was planned), 2 when the harness itself failed.
import { ApiClient, type HookSetup } from './lib/api-client';
import { stopAll } from './lib/children';
import { startHelper } from './lib/helper';
import { machineInfo, redact } from './lib/machine';
import { writeReport } from './lib/report';
import { startStack } from './lib/stack';
import { runChaosLoad, type Outage } from './chaos/chaos-load';
import { parseChaosOptions } from './chaos/chaos-options';
import { checkFaultSchedule, DEFAULT_FAULTS, planFaults, runFaults } from './chaos/faults';
import { startPrivatePostgres, type PrivatePostgres } from './lib/private-postgres';
import { startPrivateRedis } from './lib/private-redis';
import { waitQuiescent } from './chaos/quiescence';
import { verify, type DestinationSpec } from './chaos/verify';
import type { ReceiverDump } from './chaos/receiver.main';

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
      log(`! no private PostgreSQL (${err.message.split('\n')[0]}): using the shared one, so a planned PostgreSQL fault cannot happen (the verdict is then INCOMPLETE)`);
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
  // Supervised: a service that exits on its own is restarted (the run completes) and the
  // exit fails the verdict.
  const stack = await startStack({ label: 'chaos', databaseUrl: pg?.url ?? o.sharedDatabaseUrl, redisUrl: redis.url, env, shipped: true, supervise: true, onSupervisorEvent: log });
  const rx = await startHelper<{ port: number }>('chaos-receiver', 'bench/chaos/receiver.main.ts', { CHAOS_FAIL_RATE: String(o.failRate), CHAOS_SLOW_MS: String(o.timeoutMs * 2) });
  const api = await ApiClient.forNewTenant(stack.apiUrl, stack.pool);
  const hooks: HookSetup[] = [];
  const destinations = new Map<string, DestinationSpec>();
  const destinationConfig = { timeout_ms: o.timeoutMs, max_attempts: o.maxAttempts };
  for (const [k, f] of o.fanouts.entries()) {
    const paths = Array.from({ length: f }, (_, i) => `/h${k}/d${i + 1}`);
    const hook = await api.hook(`chaos-h${k}`, paths.map((p) => `http://127.0.0.1:${rx.hello.port}${p}`), destinationConfig);
    hook.destinationIds.forEach((id, i) => destinations.set(id, { path: paths[i]!, maxAttempts: o.maxAttempts }));
    hooks.push(hook);
  }
  const sendMs = (o.events / o.rate) * 1000;
  const plan = planFaults(o.faults, sendMs);
  log(`\n${o.events} events at ${o.rate}/s over ${hooks.length} ingesters (fan-out ${o.fanouts.join('/')}), receivers failing ${Math.round(o.failRate * 100)} %, ${o.maxAttempts} attempts per delivery`);
  log(`fault schedule (${o.faultsExplicit ? `--faults ${o.faults || "''"}` : 'the default'}):`);
  for (const f of plan) log(`  t+${(f.atMs / 1000).toFixed(1)} s  ${f.kind === 'redis' ? 'restart Redis empty' : f.kind === 'postgres' ? `stop PostgreSQL for ${o.pgDownMs} ms` : `kill -9 ${f.kind}`}`);
  if (plan.length === 0) log('  (none: the verdict will be INCOMPLETE)');

  const outages: Outage[] = [];
  const t0 = Date.now();
  const loadP = runChaosLoad({
    hookUrls: hooks.map((h) => h.hookUrl),
    events: o.events,
    rate: o.rate,
    runId,
    perEventDeadlineMs: o.perEventDeadlineMs,
    onProgress: (sent, acked, statuses) =>
      void rx.ipc.call<{ requests: number }>('summary').then((s) => log(`  [t+${Math.round((Date.now() - t0) / 1000)} s] sent ${sent}, acknowledged ${acked}, receiver requests ${s.requests}; answers ${JSON.stringify(statuses)}`)).catch(() => undefined),
  });
  const faultLogs = await runFaults({ stack, redis, pg, pgDownMs: o.pgDownMs, outages, log }, plan, t0);
  const load = await loadP;
  log(`load done: ${load.acked.size} acknowledged, ${load.unacked.length} not, ${load.attempts} requests; answers ${JSON.stringify(load.statuses)}`);
  log('waiting for quiescence…');
  const quiet = await waitQuiescent(stack.pool, async () => (await rx.ipc.call<{ requests: number }>('summary')).requests, o.settleTimeoutMs, log);
  const dump = await rx.ipc.call<ReceiverDump>('dump', undefined, 120_000);
  const schedule = checkFaultSchedule({ spec: o.faults, explicit: o.faultsExplicit }, plan, faultLogs);
  const verdict = await verify(stack.pool, api, {
    hooks,
    destinations,
    load,
    receiver: dump,
    runId,
    faults: faultLogs.filter((f) => f.ok),
    outages,
    unexpectedExits: stack.unexpectedExits,
    failRate: o.failRate,
    // A batch's outcomes are recorded within a few timeouts of its sends.
    attributionWindowMs: 5000 + 10 * o.timeoutMs,
  });
  // A PostgreSQL outage the load did not reach (it had ended, or nearly) tested nothing of ingest.
  if (verdict.pgOutage.outages && !verdict.pgOutage.exercised) {
    schedule.complete = false;
    schedule.problems.push(`only ${verdict.pgOutage.startedInside} requests were sent to ingest while PostgreSQL was down (the load had ended): its answers could not be judged; lengthen the send window (--events / --rate)`);
  }
  const failures = [...verdict.failures, ...(quiet.quiescent ? [] : [`not quiescent after ${Math.round(quiet.waitedMs / 1000)} s: ${quiet.openEvents} events to route, ${quiet.openDeliveries} deliveries open`])];
  // FAIL outranks INCOMPLETE: a check failed whatever the schedule; INCOMPLETE: every check
  // passed, but a planned fault did not happen, so the run proves less than it should.
  const status = failures.length ? 'FAIL' : schedule.complete ? 'PASS' : 'INCOMPLETE';
  const report = {
    kind: 'hookline-chaos',
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    config: { ...o, serviceEnv: redact(o.serviceEnv), stackEnv: redact(stack.env), privatePostgres: !!pg, privateRedis: true, destinationConfig, receiverSlowMs: o.timeoutMs * 2 },
    faults: faultLogs,
    faultSchedule: schedule,
    load: {
      acknowledged: load.acked.size,
      unacknowledged: load.unacked.length,
      unacknowledgedSeqs: load.unacked,
      requests: load.attempts,
      statuses: load.statuses,
      sendSeconds: load.sendSeconds,
      pgOutages: outages,
      // Every request to ingest: [seq, attempt n, start - t0 ms, duration ms, answer].
      t0,
      attemptLog: load.attemptLog.map((a) => [a.seq, a.n, a.start - t0, a.end - a.start, a.status]),
    },
    quiescence: quiet,
    unexpectedExits: stack.unexpectedExits,
    verdict: { ...verdict, status, pass: status === 'PASS', checksPass: failures.length === 0, failures, faultsRan: schedule.ranSummary, faultScheduleComplete: schedule.complete, faultScheduleReduced: schedule.reduced, faultProblems: schedule.problems },
  };
  const file = writeReport(report, o.out, 'chaos-');
  const d = verdict.dlqShare;
  const po = verdict.pgOutage;
  log(`\n=== pnpm chaos verdict: ${status} ===`);
  log(`faults run: ${schedule.ranSummary} (${schedule.explicit ? `--faults ${schedule.requested || "''"}` : 'default schedule'}${schedule.reduced ? `; reduced from the default ${DEFAULT_FAULTS}` : ''})${schedule.complete ? '' : `; INCOMPLETE: ${schedule.problems.join('; ')}`}`);
  log(`acknowledged ${verdict.acknowledgedEvents} events (${verdict.unacknowledgedEvents} never acknowledged) -> ${verdict.expectedDeliveries} deliveries expected: ${verdict.delivered} delivered, ${verdict.inDlq} exhausted in the DLQ, ${verdict.lost} LOST (${verdict.dlqNotGenuine} of them in the DLQ without being exhausted by retryable failures)`);
  log(`DLQ share ${d.sharePct} % (${d.exhausted}); ${o.failRate}^${o.maxAttempts} predicts ${d.expectedPct} % (${d.expected}); bound ${d.bound}: ${d.withinBound ? 'within' : 'EXCEEDED'}`);
  log(`delivered but never acknowledged ${verdict.deliveredNotAcknowledged}, unknown delivery keys ${verdict.phantomDeliveries}, acknowledged events missing in the DB ${verdict.ackedEventsMissingInDb}, provider keys stored twice ${verdict.eventsPerKeyOverOne}`);
  log(`requests with a wrong path/event id/sequence ${verdict.requestMismatches}, without the idempotency key ${verdict.requestsWithoutKey}`);
  log(`duplicates ${verdict.duplicateDeliveries} (${verdict.duplicateRatePct} %, goal < 0.5 %: ${verdict.duplicatesGoalMet ? 'met' : 'MISSED'}), plus ${verdict.lateProcessedDuplicates} after a timed-out attempt`);
  if (verdict.duplicateDeliveries) log(`duplicates by the fault just after their first 200: ${JSON.stringify(verdict.duplicatesByFault)}`);
  log(`PostgreSQL outages ${po.outages}: ${po.startedInside} requests sent during them; ${po.judged} answered wholly inside (${po.answered503} × 503, ${po.not503} other, ${po.okWhileDown} 2xx), ${po.notJudgedOverlapping} overlapping an edge not judged`);
  log(`exhausted although the receiver answered 200 (counted delivered): ${verdict.exhaustedButDelivered}`);
  log(`service exits no fault caused: ${verdict.unexpectedExits.length}; quiescent: ${quiet.quiescent} after ${Math.round(quiet.waitedMs / 1000)} s; DLQ via API matches DB: ${verdict.dlqApiMatchesDb}`);
  if (verdict.lostSamples.length) log(`lost (first ${verdict.lostSamples.length}): ${JSON.stringify(verdict.lostSamples, null, 1)}`);
  if (verdict.requestMismatchSamples.length) log(`request mismatches (first ${verdict.requestMismatchSamples.length}): ${JSON.stringify(verdict.requestMismatchSamples)}`);
  if (po.samples.length) log(`non-503 answers inside the outage (first ${po.samples.length}): ${JSON.stringify(po.samples)}`);
  for (const f of failures) log(`FAIL: ${f}`);
  console.log(JSON.stringify({ verdict: { ...report.verdict, lostSamples: undefined, requestMismatchSamples: undefined }, quiescence: quiet, faults: faultLogs.length, json: file }));
  log(`JSON: ${file}`);
  await rx.child.kill();
  const keep = status === 'FAIL' && !pg;
  // A failed run on the shared PostgreSQL keeps its schema for inspection.
  if (keep) log(`kept schema ${stack.schema} and prefix ${stack.prefix} for inspection`);
  await stack.close({ keepData: keep });
  await pg?.close();
  await redis.close();
  return status === 'PASS' ? 0 : status === 'FAIL' ? 1 : 3;
}

main().then(
  (code) => process.exit(code),
  async (err: Error) => {
    console.error(`chaos failed: ${err.stack ?? err.message}`);
    await stopAll();
    process.exit(2);
  },
);
