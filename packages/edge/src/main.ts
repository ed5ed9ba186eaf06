// hookline-edge: config -> logger -> service client, target sender, reporter -> pull loop
// -> health server -> graceful SIGTERM (stop pulling, finish and report in-flight, exit).
import { ConfigError, loadConfig } from '@hookline/config';
import { closeServer, startHealthServer } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { version } from '../package.json';
import { createEdgeAgent } from './agent';
import { agentIdOf, edgeAgentEnv, pemOf } from './config';
import { createReporter } from './reporter';
import { createServiceClient } from './service-client';
import { createTargetSender } from './target-sender';

async function main(): Promise<void> {
  const config = loadConfig(edgeAgentEnv);
  const logger = createLogger('edge', config.LOG_LEVEL);
  const agentId = agentIdOf(config);
  const tls = { cert: pemOf(config.EDGE_CLIENT_CERT), key: pemOf(config.EDGE_CLIENT_KEY), ca: pemOf(config.EDGE_CA) };
  if (Boolean(tls.cert) !== Boolean(tls.key)) throw new ConfigError(['EDGE_CLIENT_CERT and EDGE_CLIENT_KEY go together']);
  const client = createServiceClient({ baseUrl: config.HOOKLINE_URL, clusterKey: config.CLUSTER_KEY, agentId, agentVersion: version, tls });
  const sender = createTargetSender();
  const backoff = { baseMs: config.EDGE_BACKOFF_BASE_MS, maxMs: config.EDGE_BACKOFF_MAX_MS };
  const reporter = createReporter({ client, clusterId: config.CLUSTER_ID, logger, backoff });
  const agent = createEdgeAgent({ client, sender, reporter, logger, clusterId: config.CLUSTER_ID, maxInFlight: config.EDGE_MAX_IN_FLIGHT, waitSeconds: config.EDGE_POLL_WAIT_SECONDS, backoff });
  agent.start();
  // Ready while the service answered a work request recently (a long-poll plus slack).
  const freshMs = (config.EDGE_POLL_WAIT_SECONDS + 30) * 1000;
  const health = await startHealthServer(config.PORT, config.HOST, async () => ({ service: Date.now() - agent.lastContactAt() < freshMs }));
  logger.info('hookline-edge started', { agent_id: agentId, version, cluster_id: config.CLUSTER_ID, service: new URL(config.HOOKLINE_URL).origin, max_in_flight: config.EDGE_MAX_IN_FLIGHT, mtls: Boolean(tls.cert) });

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal, in_flight: agent.inFlight() });
    setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 5_000).unref();
    health.setDraining();
    await agent.stop(config.SHUTDOWN_TIMEOUT_MS);
    if (agent.inFlight() > 0) logger.warn('exiting with deliveries unreported; their leases will expire', { in_flight: agent.inFlight() });
    await Promise.all([sender.close(), client.close()]).catch(() => undefined);
    await closeServer(health.server, 1_000);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: Error) => {
  console.error(err instanceof ConfigError ? `hookline-edge: ${err.message}` : `hookline-edge failed to start: ${err.stack ?? err.message}`);
  process.exit(1);
});
