import { createServer } from 'node:http';
import express from 'express';
import { createPool, createPrisma } from '@hookline/db';
import { closeServer, onShutdownSignal } from '@hookline/http';
import { evidenceKey, startEvidenceSealer } from '@hookline/evidence';
import { createLogger } from '@hookline/logger';
import { createObservability, httpObserverMiddleware, instrumentPool, instrumentRedis, sendMetrics } from '@hookline/observability';
import { createProducer, createRedis, redisReady } from '@hookline/queues';
import { buildApp } from './app';
import { loadApiConfig } from './config';
import { defaultPlugins } from './plugins';

/** Wiring only: config → logger → PostgreSQL/Redis → HTTP server → graceful SIGTERM. */
async function main(): Promise<void> {
  const config = loadApiConfig();
  const logger = createLogger('api', config.LOG_LEVEL);
  const { metrics, tracer } = createObservability('api', config, logger);
  // Every PostgreSQL pool counts its errors in hookline_db_errors_total: Prisma's (most reads
  // and writes), the raw one and the claim heartbeats'.
  const prisma = createPrisma(config.DATABASE_URL, config.DB_POOL_MAX, { instrumentPool: (p) => instrumentPool(p, metrics) });
  const pool = instrumentPool(createPool(config.DATABASE_URL, config.DB_POOL_MAX), metrics);
  // Idempotency-Key heartbeats only (context.ts): two connections besides DB_POOL_MAX.
  const claimPool = instrumentPool(createPool(config.DATABASE_URL, 2), metrics);
  const redis = instrumentRedis(createRedis(config.REDIS_URL, 'producer', config.REDIS_CLUSTER_NODES, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS }), metrics);
  // A producer connection refuses commands until connected; give it a moment at boot.
  if (!(await redisReady(redis, 10_000))) logger.warn('redis not reachable at start; continuing (readiness reports it)');
  const producer = createProducer(redis, config.QUEUE_PREFIX);
  const api = buildApp({ prisma, pool, claimPool, redis, producer, config, logger }, defaultPlugins(config));
  const sealer = startEvidenceSealer(
    { pool, logger: logger.child({ component: 'evidence' }), key: evidenceKey(config.SECRETS_KEY, config.EVIDENCE_KEY || undefined), windowMs: config.EVIDENCE_WINDOW_MS, graceMs: config.EVIDENCE_SEAL_GRACE_MS },
    config.EVIDENCE_SEAL_INTERVAL_MS,
  );
  // Around the whole app: /metrics, and per request its metrics (by route pattern) and one log line.
  const root = express();
  root.disable('x-powered-by');
  root.use(httpObserverMiddleware({ metrics, logger, tracer }));
  root.get('/metrics', (req, res) => void sendMetrics(metrics.registry, req, res, config.METRICS_TOKEN));
  root.use(api.app);
  // A slow or stalled client must not hold a socket, nor the body express.json buffers
  // before authentication: 408 and close once the whole request has not arrived within
  // API_REQUEST_TIMEOUT_MS (its headers within API_HEADERS_TIMEOUT_MS). Neither covers the
  // response, so edge long-polls still wait in their answer. Open connections are capped.
  const limits = config.httpServer;
  const server = createServer({ requestTimeout: limits.requestTimeout, headersTimeout: limits.headersTimeout, connectionsCheckingInterval: limits.connectionsCheckingInterval }, root);
  server.keepAliveTimeout = limits.keepAliveTimeout;
  if (limits.maxConnections !== null) {
    server.maxConnections = limits.maxConnections;
    // Node closes a connection over the cap at once; say so, at most once a minute.
    let dropped = 0;
    let warnedAt = 0;
    server.on('drop', () => {
      dropped++;
      if (Date.now() - warnedAt < 60_000) return;
      warnedAt = Date.now();
      logger.warn('api refused connections over API_MAX_CONNECTIONS', { max_connections: limits.maxConnections, dropped });
      dropped = 0;
    });
  }
  server.listen(config.PORT, config.HOST, () => logger.info('api listening', { host: config.HOST, port: config.PORT }));
  server.on('error', (err) => {
    logger.error('api server failed', { err: err.message });
    process.exit(1);
  });

  // Readiness turns 503 first (and edge long-polls answer empty at once, leasing nothing),
  // the listener closes and open requests finish; a second signal exits at once.
  onShutdownSignal(
    logger,
    config.SHUTDOWN_TIMEOUT_MS,
    async () => {
      api.setDraining();
      await closeServer(server, Math.floor(config.SHUTDOWN_TIMEOUT_MS * 0.8));
      await sealer.stop().catch((err: Error) => logger.error('evidence sealer did not stop cleanly', { err: err.message }));
      await Promise.allSettled([producer.close(), prisma.$disconnect(), pool.end(), claimPool.end(), tracer.close()]);
      redis.disconnect();
    },
    { graceMs: 2_000 },
  );
}

main().catch((err: Error) => {
  process.stderr.write(`api failed to start: ${err.message}\n`);
  process.exit(1);
});
