import { ConfigError, loadConfig } from '@hookline/config';
import { createPool } from '@hookline/db';
import { onShutdownSignal } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { createObservability, instrumentPool, instrumentRedis } from '@hookline/observability';
import { createProducer, createRedis, redisReady } from '@hookline/queues';
import { createIngestApp } from './app';
import { ingestEnv, trustedProxies } from './config';

/** Wiring only: config → logger → PostgreSQL/Redis → server → graceful SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig(ingestEnv);
  const proxies = trustedProxies(config.TRUSTED_PROXIES);
  const logger = createLogger('ingest', config.LOG_LEVEL);
  const observability = createObservability('ingest', config, logger);
  const { metrics } = observability;
  const pool = instrumentPool(createPool(config.DATABASE_URL, config.DB_POOL_MAX, { indexPlans: true }), metrics);
  const redis = instrumentRedis(createRedis(config.REDIS_URL, 'producer', config.REDIS_CLUSTER_NODES, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS }), metrics);
  // A producer connection refuses commands until connected; give it a moment at boot.
  if (!(await redisReady(redis, 10_000))) logger.warn('redis not reachable at start; continuing (readiness reports it)');
  const subscriber = instrumentRedis(createRedis(config.REDIS_URL, 'worker', config.REDIS_CLUSTER_NODES), metrics);
  const producer = createProducer(redis, config.QUEUE_PREFIX);
  const app = createIngestApp({ config, trustedProxies: proxies, pool, producer, redis, subscriber, logger, observability });
  const url = await app.listen(config.PORT, config.HOST);
  logger.info('ingest listening', { url, public_url: config.INGEST_PUBLIC_URL });

  onShutdownSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
    // Readiness goes false, the listener closes, open requests finish and batches flush.
    await app.close(Math.floor(config.SHUTDOWN_TIMEOUT_MS * 0.7));
    await producer.close().catch(() => undefined);
    await observability.tracer.close();
    redis.disconnect();
    subscriber.disconnect();
    await pool.end().catch(() => undefined);
    logger.info('stopped');
  });
}

main().catch((err: Error) => {
  // A configuration error names the variable; anything else is printed whole.
  process.stderr.write(`ingest failed to start: ${err instanceof ConfigError ? err.message : (err.stack ?? err.message)}\n`);
  process.exit(1);
});
