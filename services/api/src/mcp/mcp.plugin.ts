import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cachedDiscovery, type Discovery } from '@hookline/evidence';
import type { ApiPlugin } from '../app';
import { authenticate } from '../auth/authenticate';
import type { ApiConfig } from '../config';
import { createDiscoveryRouter, REPO_ROOT } from '../discovery/discovery.routes';
import { createMcpRouter } from './mcp.routes';
import { discoveryPaths, mcpPaths } from './mcp.openapi';

/** The version of the checkout the api runs from (root package.json). */
function buildVersion(): string {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

/** The discovery documents of this process, built once from the code registries and tests present. */
export function apiDiscovery(config: ApiConfig): () => Discovery {
  return cachedDiscovery({
    repoRoot: REPO_ROOT,
    baseUrl: config.API_PUBLIC_URL,
    repository: config.SOURCE_REPOSITORY_URL,
    // The named tests run against local processes and mocks, whatever the deployment.
    evidenceScope: 'local_mock_harness_only',
    sealIntervalMs: config.EVIDENCE_SEAL_INTERVAL_MS,
    windowMs: config.EVIDENCE_WINDOW_MS,
  });
}

/**
 * The MCP surface (`/v1/mcp…`, `/v1/tenants/{tid}/mcp-keys…`) and the public discovery
 * documents (`/ai/evidence/v1/…`, `/ai/security/v1/…`) as an api plugin. MCP key management
 * accepts the api's own credentials (API keys and session JWTs).
 */
export function mcpPlugin(config: ApiConfig): ApiPlugin {
  const discovery = apiDiscovery(config);
  const build = { version: buildVersion(), commit: null };
  return {
    name: 'mcp',
    mount(app, ctx) {
      app.use(
        createMcpRouter({
          pool: ctx.pool,
          redis: ctx.redis,
          producer: ctx.producer,
          logger: ctx.logger.child({ component: 'mcp' }),
          queuePrefix: ctx.config.QUEUE_PREFIX,
          rateLimits: ctx.config.rateLimits,
          mcpKeyRateLimit: ctx.config.mcpKeyRateLimit,
          pools: ctx.config.pools,
          discovery,
          build,
          authenticateApiCaller: (headers) => authenticate(ctx, headers),
          app: ctx,
        }),
      );
      app.use(createDiscoveryRouter({ discovery }));
    },
    openApiPaths: { ...mcpPaths, ...discoveryPaths(Object.keys(discovery().documents)) },
  };
}
