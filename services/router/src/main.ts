// Composition root of the router: config → logger → PostgreSQL → Redis → worker, sweeper,
// queue metrics and health server → graceful drain on SIGTERM/SIGINT.
import { loadConfig } from '@hookline/config';
import { createPool } from '@hookline/db';
import { closeServer, onShutdownSignal, startHealthServer } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { createObservability, instrumentPool, instrumentRedis, sendMetrics, startQueueSampler } from '@hookline/observability';
import { createProducer, createRedis, createWorker, onConfigChange, parseDedicatedPools, redisReady } from '@hookline/queues';
import { routerEnv } from './config';
import { FlowCache } from './flow-cache';
import { startRecoverySweeper } from './recover-events';
import { routeJobHandler } from './route.worker';

async function main(): Promise<void> {
  const config = loadConfig(routerEnv);
  const pools = parseDedicatedPools(config.DEDICATED_POOLS);
  const logger = createLogger('router', config.LOG_LEVEL);
  const { metrics, tracer } = createObservability('router', config, logger);
  const pool = instrumentPool(createPool(config.DATABASE_URL, config.DB_POOL_MAX, { indexPlans: true }), metrics);
  const redisOf = (role: 'worker' | 'producer') => instrumentRedis(createRedis(config.REDIS_URL, role, config.REDIS_CLUSTER_NODES, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS }), metrics);
  const workerRedis = redisOf('worker');
  const producerRedis = redisOf('producer');
  // A producer connection refuses commands until connected (no offline queue): wait for it,
  // so the first routed batches are enqueued rather than left to the recovery sweep.
  if (!(await redisReady(producerRedis, 10_000))) logger.warn('redis not reachable at start; continuing (readiness reports it)');
  const subscriber = redisOf('worker');

  const flows = new FlowCache(pool, config.FLOW_CACHE_TTL_MS, (id, errors, kind) =>
    kind === 'ingester'
      ? logger.warn('ingester has invalid filters; they match nothing, so none of its events is routed', { ingester_id: id, errors })
      : logger.warn('flow has an invalid filter; it matches nothing', { flow_id: id, errors }),
  );
  // Changes announced while the subscriber was disconnected were missed: drop the whole cache.
  await onConfigChange(subscriber, config.QUEUE_PREFIX, (change) => flows.invalidate(change), () => flows.clear());

  const producer = createProducer(producerRedis, config.QUEUE_PREFIX);
  const deps = { pool, producer, flows, logger, pools, metrics, tracer };
  const worker = createWorker('route', workerRedis, config.QUEUE_PREFIX, config.ROUTER_CONCURRENCY, routeJobHandler(deps), (err) => logger.error('route worker error', { err: err.message }));
  const sweeper = startRecoverySweeper(deps, {
    intervalMs: config.RECOVERY_INTERVAL_MS,
    olderThanMs: config.RECOVERY_AFTER_MS,
    limit: config.RECOVERY_BATCH,
  });
  // The router sees every queue: its own and each deliverer pool's.
  const sampled = [{ name: 'route' as const }, { name: 'deliver' as const }, ...[...new Set(pools.values())].map((p) => ({ name: 'deliver' as const, pool: p }))];
  const sampler = startQueueSampler({ producer, metrics, logger }, sampled, config.QUEUE_METRICS_INTERVAL_MS);

  const health = await startHealthServer(
    config.PORT,
    config.HOST,
    async () => ({
      postgres: await pool.query('SELECT 1').then(() => true, () => false),
      redis: await producerRedis.ping().then(() => true, () => false),
    }),
    { '/metrics': (res, req) => sendMetrics(metrics.registry, req, res, config.METRICS_TOKEN) },
  );
  logger.info('router started', { port: config.PORT, concurrency: config.ROUTER_CONCURRENCY, dedicated_pools: [...new Set(pools.values())] });

  // Readiness turns 503 first; a second signal exits at once (stalled jobs go back to the queue).
  onShutdownSignal(
    logger,
    config.SHUTDOWN_TIMEOUT_MS,
    async () => {
      health.setDraining();
      // Jobs in progress finish; any still running at the deadline go back to the queue
      // (routing is idempotent, so a job run twice creates nothing twice).
      const requeued = await worker.drain(Math.floor(config.SHUTDOWN_TIMEOUT_MS * 0.8));
      if (requeued) logger.warn('route jobs still running at the drain deadline were put back', { jobs: requeued });
      await Promise.all([sweeper.stop(), sampler.stop()]);
      await producer.close();
      await tracer.close();
      await closeServer(health.server, 1000);
      for (const r of [subscriber, workerRedis, producerRedis]) await r.quit().catch(() => r.disconnect());
      await pool.end();
      logger.info('router stopped');
    },
    { graceMs: 2_000 },
  );
}

main().catch((err: Error) => {
  // Config errors name the bad variable; print them plainly and stop.
  process.stderr.write(`router failed to start: ${err.message}\n`);
  process.exit(1);
});
