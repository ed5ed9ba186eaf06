// The deliverer process: config -> logger -> PostgreSQL/Redis -> deliver worker per queue,
// recovery sweep, DLQ purge and janitor (woken by deletes that left it work) -> health server
// and metrics -> graceful drain on SIGTERM.
import { ConfigError, loadConfig } from '@hookline/config';
import { createPool } from '@hookline/db';
import { closeServer, onShutdownSignal, startHealthServer } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { createObservability, instrumentPool, instrumentRedis, sendMetrics, startQueueSampler } from '@hookline/observability';
import { createProducer, createRedis, createWorker, parseDedicatedPools, parseDeliverQueues, redisReady } from '@hookline/queues';
import { delivererEnv } from './config';
import { deliverJobHandler } from './deliver-job';
import { sweepEdgeWaits } from './edge-wait-sweep';
import { createJanitor } from './close-deleted';
import { wakeJanitorOnDeletes } from './janitor-wakeup';
import { buildDeliverDeps } from './deliverer-deps';
import { every } from './periodic';
import { purgeDlq } from './purge-dlq';
import { purgeExpired } from './purge-expired';
import { observeBreaker } from './observed-breaker';
import { observeSender } from './observed-sender';
import { poolProducer, tenantPoolProducer } from './pool-routing';
import { recoverDeliveries } from './recover-deliveries';
import { releaseHeldDeliveries } from './release-leases';

async function main(): Promise<void> {
  const config = loadConfig(delivererEnv);
  const queues = parseDeliverQueues(config.DELIVER_QUEUES);
  const pools = parseDedicatedPools(config.DEDICATED_POOLS);
  const logger = createLogger('deliverer', config.LOG_LEVEL);
  const { metrics, tracer } = createObservability('deliverer', config, logger);
  const pool = instrumentPool(createPool(config.DATABASE_URL, config.DB_POOL_MAX, { indexPlans: true }), metrics);
  const workerRedis = instrumentRedis(createRedis(config.REDIS_URL, 'worker', config.REDIS_CLUSTER_NODES), metrics);
  const redis = instrumentRedis(createRedis(config.REDIS_URL, 'producer', config.REDIS_CLUSTER_NODES, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS }), metrics);
  // Retries and breaker scripts go through this connection: wait for it at boot.
  if (!(await redisReady(redis, 10_000))) logger.warn('redis not reachable at start; continuing (readiness reports it)');
  const producer = createProducer(redis, config.QUEUE_PREFIX);
  const built = buildDeliverDeps(config, { pool, redis, producer, logger });
  const breaker = observeBreaker(built.breaker, metrics, redis, config.QUEUE_PREFIX, pool);
  const deps = { ...built, breaker: breaker.breaker, sender: observeSender(built.sender, { metrics, tracer, logger }) };

  // One worker per queue consumed (DELIVER_QUEUES), each with DELIVERER_CONCURRENCY.
  const workers = queues.map(({ queue, pool: name }) =>
    createWorker(
      'deliver',
      workerRedis,
      config.QUEUE_PREFIX,
      config.DELIVERER_CONCURRENCY,
      deliverJobHandler({ deps: { ...deps, producer: poolProducer(producer, name) }, metrics, tracer, logger }, queue),
      (err) => logger.error('deliver worker error', { queue, error: err.message }),
      { pool: name },
    ),
  );
  const sampler = startQueueSampler({ producer, metrics, logger }, queues.map((q) => ({ name: 'deliver' as const, pool: q.pool })), config.QUEUE_METRICS_INTERVAL_MS);
  const circuits = every(config.QUEUE_METRICS_INTERVAL_MS, 'breaker metrics', logger, () => breaker.refresh());
  const recoveryProducer = tenantPoolProducer(producer, pool, pools);
  const recovery = every(config.RECOVERY_INTERVAL_MS, 'recovery sweep', logger, async () => {
    const n = await recoverDeliveries({ pool, producer: recoveryProducer }, { afterMs: config.RECOVERY_AFTER_MS, batchSize: config.RECOVERY_BATCH_SIZE });
    if (n) logger.info('re-enqueued stranded deliveries', { count: n });
  });
  const edgeWaits = every(config.RECOVERY_INTERVAL_MS, 'edge wait sweep', logger, async () => {
    const input = { connectedWindowMs: config.EDGE_CONNECTED_WINDOW_MS, waitLimitMs: config.EDGE_WAIT_LIMIT_MS, batchSize: config.RECOVERY_BATCH_SIZE, instanceId: deps.instanceId };
    const n = await sweepEdgeWaits({ pool, policy: deps }, input);
    if (n) logger.warn('deliveries failed waiting for an edge agent', { count: n });
  });
  const purge = every(config.PURGE_INTERVAL_MS, 'dlq purge', logger, async () => {
    const r = await purgeDlq(pool, { retentionMs: config.DLQ_RETENTION_MS });
    if (r?.deliveries) logger.info('purged expired DLQ entries', { ...r });
    // Each batch commits on its own: a transaction over the whole run would hold its rows'
    // locks, and ingest taking over an expired key would wait for all of it. Replicas may run
    // it at once: expired records are locked SKIP LOCKED, and a rejection another replica
    // deletes first is simply not there any more.
    const expired = await purgeExpired(pool, { rejectionRetentionMs: config.INGEST_REJECTION_RETENTION_MS });
    if (expired.idempotency_records || expired.ingest_rejections) logger.info('purged expired idempotency records and old ingest rejections', { ...expired });
  });
  const janitorRun = createJanitor(pool, { heldRetentionMs: config.HELD_RETENTION_MS });
  const janitor = every(config.JANITOR_INTERVAL_MS, 'janitor', logger, async () => {
    const r = await janitorRun();
    if (r && (r.destination || r.flow)) logger.warn('closed open deliveries of deleted destinations or flows (moved to the DLQ)', { destination: r.destination, flow: r.flow, more: r.more });
    if (r?.held) logger.warn('moved held deliveries past HELD_RETENTION_MS to the DLQ', { held: r.held });
  });
  // A delete that left open deliveries to the janitor has it run now.
  const subscriber = instrumentRedis(createRedis(config.REDIS_URL, 'worker', config.REDIS_CLUSTER_NODES), metrics);
  wakeJanitorOnDeletes(subscriber, config.QUEUE_PREFIX, janitor).catch((err: Error) =>
    logger.warn('config-change subscription failed; the janitor runs on its interval only', { error: err.message }),
  );
  const health = await startHealthServer(
    config.PORT,
    config.HOST,
    async () => ({
      postgres: await pool.query('SELECT 1').then(() => true, () => false),
      redis: await redis.ping().then(() => true, () => false),
    }),
    { '/metrics': (res, req) => sendMetrics(metrics.registry, req, res, config.METRICS_TOKEN) },
  );
  logger.info('deliverer started', { port: config.PORT, concurrency: config.DELIVERER_CONCURRENCY, queues: queues.map((q) => q.queue) });

  // Readiness turns 503 first; a second signal exits at once (claims and stalled jobs expire
  // and are recovered).
  onShutdownSignal(
    logger,
    config.SHUTDOWN_TIMEOUT_MS,
    async () => {
      health.setDraining();
      // Jobs in progress finish and record their attempts. Any still running at the deadline
      // (a slow destination) give back their deliveries and go back to the queue.
      const releaseHeld = async (jobs: { data: { deliveryIds?: unknown } }[]): Promise<void> => {
        const jobIds = jobs.flatMap((j) => (Array.isArray(j.data?.deliveryIds) ? j.data.deliveryIds.filter((id): id is string => typeof id === 'string') : []));
        const ids = await releaseHeldDeliveries(pool, deps.instanceId, jobIds);
        logger.warn('drain deadline: deliveries in flight given back', { delivery_ids: ids });
      };
      const requeued = await Promise.all(workers.map((w) => w.drain(Math.floor(config.SHUTDOWN_TIMEOUT_MS * 0.8), releaseHeld)));
      if (requeued.some(Boolean)) logger.warn('drain deadline: deliver jobs put back on their queues', { jobs: requeued.reduce((a, b) => a + b, 0) });
      await Promise.all([recovery.stop(), edgeWaits.stop(), purge.stop(), janitor.stop(), sampler.stop(), circuits.stop()]);
      await tracer.close();
      // After a deadline, requests still out are abandoned (their deliveries were given back).
      if (requeued.some(Boolean)) void deps.sender.close();
      else await deps.sender.close();
      await producer.close();
      subscriber.disconnect();
      await Promise.all([redis.quit().catch(() => undefined), workerRedis.quit().catch(() => undefined)]);
      await pool.end();
      await closeServer(health.server, 1_000);
    },
    { graceMs: 5_000 },
  );
}

main().catch((err: Error) => {
  console.error(err instanceof ConfigError ? `deliverer: ${err.message}` : `deliverer failed to start: ${err.stack ?? err.message}`);
  process.exit(1);
});
