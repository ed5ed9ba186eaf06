// hookline-edge: config -> logger -> service client, target sender, reporter, releaser ->
// health server -> pull loop -> graceful SIGTERM (stop pulling, finish and report in-flight,
// give back the leases of what was not sent, exit; the same signal again exits at once).
import { ConfigError } from '@hookline/config';
import { closeServer, onShutdownSignal, startHealthServer } from '@hookline/http';
import { createLogger } from '@hookline/logger';
import { version } from '../package.json';
import { createEdgeAgent } from './agent';
import { agentIdOf, loadEdgeConfig } from './config';
import { createReleaser } from './releaser';
import { createReporter } from './reporter';
import { createServiceClient } from './service-client';
import { createTargetGuard } from './target-guard';
import { createTargetSender } from './target-sender';

async function main(): Promise<void> {
  const { config, tls, targets } = loadEdgeConfig();
  const logger = createLogger('edge', config.LOG_LEVEL);
  const agentId = agentIdOf(config);
  const client = createServiceClient({ baseUrl: config.HOOKLINE_URL, clusterKey: config.CLUSTER_KEY, agentId, agentVersion: version, tls });
  const guard = createTargetGuard(targets, {
    onRefused: (err) => logger.warn('target refused', { host: err.host, address: err.address, reason: err.reason }),
  });
  // Reports are stamped on the service's time, as requests are signed and leases read.
  const sender = createTargetSender({ guard, sendResponseBody: config.EDGE_SEND_RESPONSE_BODY, now: client.now });
  const backoff = { baseMs: config.EDGE_BACKOFF_BASE_MS, maxMs: config.EDGE_BACKOFF_MAX_MS };
  const reporter = createReporter({ client, clusterId: config.CLUSTER_ID, logger, backoff });
  const releaser = createReleaser({ client, clusterId: config.CLUSTER_ID, logger });
  const agent = createEdgeAgent({ client, sender, reporter, releaser, logger, clusterId: config.CLUSTER_ID, maxInFlight: config.EDGE_MAX_IN_FLIGHT, waitSeconds: config.EDGE_POLL_WAIT_SECONDS, backoff });
  // Ready while the service answered a work request recently (a long-poll plus slack).
  const freshMs = (config.EDGE_POLL_WAIT_SECONDS + 30) * 1000;
  // Listening first: an agent that cannot serve its probes stops before it leases anything.
  const health = await startHealthServer(config.PORT, config.HOST, async () => ({ service: Date.now() - agent.lastContactAt() < freshMs }));
  agent.start();
  logger.info('hookline-edge started', { agent_id: agentId, version, cluster_id: config.CLUSTER_ID, service: new URL(config.HOOKLINE_URL).origin, max_in_flight: config.EDGE_MAX_IN_FLIGHT, mtls: Boolean(tls.cert), allowed_targets: config.EDGE_ALLOWED_TARGETS || 'any', deny_link_local: config.EDGE_DENY_LINK_LOCAL, send_response_body: config.EDGE_SEND_RESPONSE_BODY });

  onShutdownSignal(
    logger,
    config.SHUTDOWN_TIMEOUT_MS,
    async () => {
      logger.info('draining', { in_flight: agent.inFlight() });
      health.setDraining();
      await agent.stop(config.SHUTDOWN_TIMEOUT_MS);
      const unreported = agent.inFlight();
      if (unreported > 0) logger.warn('exiting with deliveries unreported; their leases will expire', { in_flight: unreported });
      // Requests still out at the deadline are abandoned, not waited for (closing a pool waits for them).
      const closing = Promise.all([sender.close(), client.close()]).catch(() => undefined);
      if (unreported === 0) await closing;
      await closeServer(health.server, 1_000);
    },
    { graceMs: 5_000 },
  );
}

main().catch((err: Error) => {
  console.error(err instanceof ConfigError ? `hookline-edge: ${err.message}` : `hookline-edge failed to start: ${err.stack ?? err.message}`);
  process.exit(1);
});
