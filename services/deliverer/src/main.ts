// The deliverer process: config -> logger -> PostgreSQL/Redis -> deliver worker, recovery
// sweep and DLQ purge -> health server -> graceful SIGTERM.
import { ConfigError, loadConfig } from '@hookline/config';
import { createPool } from '@hookline/db';
import { closeServer, startHealthServer } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, createWorker } from '@hookline/queues';
import { delivererEnv } from './config';
import { deliverBatch } from './deliver-batch';
import { buildDeliverDeps } from './deliverer-deps';
import { every } from './periodic';
import { purgeDlq } from './purge-dlq';
import { recoverDeliveries } from './recover-deliveries';

async function main(): Promise<void> {
  const config = loadConfig(delivererEnv);
  const logger = createLogger('deliverer', config.LOG_LEVEL);
  const pool = createPool(config.DATABASE_URL, config.DB_POOL_MAX);
  const workerRedis = createRedis(config.REDIS_URL, 'worker');
  const redis = createRedis(config.REDIS_URL, 'producer');
  const producer = createProducer(redis, config.QUEUE_PREFIX);
  const deps = buildDeliverDeps(config, { pool, redis, producer, logger });

  const worker = createWorker(
    'deliver',
    workerRedis,
    config.QUEUE_PREFIX,
    config.DELIVERER_CONCURRENCY,
    async (data) => {
      await deliverBatch(deps, data);
    },
    (err) => logger.error('deliver worker error', { error: err.message }),
  );
  worker.worker.on('failed', (job, err) => logger.warn('deliver job failed; BullMQ retries it', { job_id: job?.id, attempts_made: job?.attemptsMade, error: err.message }));
  const recovery = every(config.RECOVERY_INTERVAL_MS, 'recovery sweep', logger, async () => {
    const n = await recoverDeliveries({ pool, producer }, { afterMs: config.RECOVERY_AFTER_MS, batchSize: config.RECOVERY_BATCH_SIZE });
    if (n) logger.info('re-enqueued stranded deliveries', { count: n });
  });
  const purge = every(config.PURGE_INTERVAL_MS, 'dlq purge', logger, async () => {
    const r = await purgeDlq(pool, { retentionMs: config.DLQ_RETENTION_MS });
    if (r?.deliveries) logger.info('purged expired DLQ entries', { ...r });
  });
  const health = await startHealthServer(config.PORT, config.HOST, async () => ({
    postgres: await pool.query('SELECT 1').then(() => true, () => false),
    redis: await redis.ping().then(() => true, () => false),
  }));
  logger.info('deliverer started', { port: config.PORT, concurrency: config.DELIVERER_CONCURRENCY });

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 5_000).unref();
    health.setDraining();
    // close() waits for the jobs in progress, so their attempts are recorded.
    await worker.close();
    await Promise.all([recovery.stop(), purge.stop()]);
    await deps.sender.close();
    await producer.close();
    await Promise.all([redis.quit().catch(() => undefined), workerRedis.quit().catch(() => undefined)]);
    await pool.end();
    await closeServer(health.server, 1_000);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: Error) => {
  console.error(err instanceof ConfigError ? `deliverer: ${err.message}` : `deliverer failed to start: ${err.stack ?? err.message}`);
  process.exit(1);
});
