import type { IncomingHttpHeaders } from 'node:http';
import type { Pool } from '@hookline/db';
import type { Discovery } from '@hookline/evidence';
import type { Logger } from '@hookline/logger';
import type { Producer, Redis } from '@hookline/queues';
import type { PlanName, RateLimit } from '../config';
import type { AppContext } from '../context';

/** A caller of the control API (not an MCP key), as the host application authenticated it. */
export interface ApiCaller {
  kind: string;
  id: string;
  tenantId: string;
  /** The tenant's plan: its rate limit. */
  plan: PlanName;
  scopes: ReadonlySet<string>;
  /** An API key's own expiry (null: none); absent for a session user. */
  expiresAt?: Date | null;
}

/** What the MCP router needs; the api's main.ts (or a test) builds it. */
export interface McpDeps {
  pool: Pool;
  redis: Redis;
  producer: Producer;
  logger: Logger;
  /** QUEUE_PREFIX: configuration changes are announced on its channel; the rate-limit buckets live under it. */
  queuePrefix: string;
  /** RATE_LIMITS per plan, as the control API applies them (same Redis bucket per tenant). */
  rateLimits: Readonly<Record<PlanName, RateLimit>>;
  /**
   * MCP_KEY_RATE_LIMIT: the bucket of an MCP key created by a control-API credential without
   * a `rate_limit` of its own, taken on top of its tenant's (mcp-rate-limit.ts); capped at the
   * tenant's plan. A key an MCP key creates stores its figures at creation (mcp-key-limit.ts).
   */
  mcpKeyRateLimit: RateLimit;
  /** DEDICATED_POOLS (tenant id → pool): retries and replays go to `deliver.<pool>`; absent, to `deliver`. */
  pools?: ReadonlyMap<string, string>;
  /** The discovery documents (capabilities, proofs, non-claims); built once by the caller. */
  discovery: () => Discovery;
  /** Version metadata for /v1/mcp/health. */
  build: { version: string; commit: string | null };
  /**
   * Authenticates a control-API credential for MCP key management. The api passes its own
   * `authenticate` (API keys and session JWTs); without it, `X-API-Key`/Bearer `hk_…` keys
   * are looked up directly.
   */
  authenticateApiCaller?: (headers: IncomingHttpHeaders) => Promise<ApiCaller>;
  /**
   * The control API's own context (mcp.plugin.ts passes it). What MCP shares with the control
   * API's writes runs on it, through the api's code: a write tool's state change goes through
   * the lifecycle (lifecycle.ts `changeState`: the same checks, circuit-breaker reset,
   * announcement and held deliveries as the REST route), and key-management writes keep their
   * `Idempotency-Key` in the api's store (limits/idempotency.ts). A router built without it
   * (some tests) serves everything else; those calls then fail with a 500 (apiContextOf).
   */
  app?: AppContext;
}

/** McpDeps.app, or an error naming what needed it (a router wired without the api's context). */
export function apiContextOf(deps: McpDeps, what: string): AppContext {
  if (!deps.app) throw new Error(`${what} needs the control API's context (McpDeps.app); this MCP router was built without it.`);
  return deps.app;
}

/** One MCP call: who is calling (an MCP key), for which tenant, under which request id. */
export interface McpPrincipal {
  keyId: string;
  tenantId: string;
  plan: PlanName;
  scopes: ReadonlySet<string>;
  /** Write tool groups enabled for this key. */
  toolGroups: ReadonlySet<string>;
  /** The key's own rate limit, set at creation; null: MCP_KEY_RATE_LIMIT. */
  rateLimit: RateLimit | null;
  /** The key's own expiry (null: none): the most a key it creates may live. */
  expiresAt: Date | null;
}

export interface McpContext {
  deps: McpDeps;
  principal: McpPrincipal;
  requestId: string;
}
