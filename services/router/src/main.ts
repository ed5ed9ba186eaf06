// Composition root of the router: config → logger → PostgreSQL → Redis → worker, sweeper
// and health server → graceful close on SIGTERM/SIGINT.
import { loadConfig } from '@hookline/config';
import { createPool } from '@hookline/db';
import { closeServer, startHealthServer } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, createWorker, onConfigChange } from '@hookline/queues';
import { routerEnv } from './config';
import { FlowCache } from './flow-cache';
import { startRecoverySweeper } from './recover-events';
import { routeJobHandler } from './route.worker';

async function main(): Promise<void> {
  const config = loadConfig(routerEnv);
  const logger = createLogger('router', config.LOG_LEVEL);
  const pool = createPool(config.DATABASE_URL, config.DB_POOL_MAX);
  const workerRedis = createRedis(config.REDIS_URL, 'worker');
  const producerRedis = createRedis(config.REDIS_URL, 'producer');
  const subscriber = createRedis(config.REDIS_URL, 'worker');

  const flows = new FlowCache(pool, config.FLOW_CACHE_TTL_MS, (flowId, errors) => logger.warn('flow has an invalid filter; it matches nothing', { flow_id: flowId, errors }));
  await onConfigChange(subscriber, config.QUEUE_PREFIX, (change) => flows.invalidate(change));

  const producer = createProducer(producerRedis, config.QUEUE_PREFIX);
  const deps = { pool, producer, flows, logger };
  const worker = createWorker('route', workerRedis, config.QUEUE_PREFIX, config.ROUTER_CONCURRENCY, routeJobHandler(deps), (err) => logger.error('route worker error', { err: err.message }));
  worker.worker.on('failed', (job, err) => logger.warn('route job failed', { job_id: job?.id, attempts: job?.attemptsMade, err: err.message }));
  const sweeper = startRecoverySweeper(deps, {
    intervalMs: config.RECOVERY_INTERVAL_MS,
    olderThanMs: config.RECOVERY_AFTER_MS,
    limit: config.RECOVERY_BATCH,
  });

  const health = await startHealthServer(config.PORT, config.HOST, async () => ({
    postgres: await pool.query('SELECT 1').then(() => true, () => false),
    redis: await producerRedis.ping().then(() => true, () => false),
  }));
  logger.info('router started', { port: config.PORT, concurrency: config.ROUTER_CONCURRENCY });

  let closing = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (closing) return;
    closing = true;
    logger.info('router stopping', { signal });
    health.setDraining();
    const force = setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    force.unref();
    await worker.close(); // lets in-flight jobs finish
    await sweeper.stop();
    await producer.close();
    await closeServer(health.server, 1000);
    for (const r of [subscriber, workerRedis, producerRedis]) await r.quit().catch(() => r.disconnect());
    await pool.end();
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: Error) => {
  // Config errors name the bad variable; print them plainly and stop.
  process.stderr.write(`router failed to start: ${err.message}\n`);
  process.exit(1);
});
