import { isIP } from 'node:net';
import { baseEnv, ConfigError, loadConfig, type ConfigOf, type EnvSchema } from '@hookline/config';
import { evidenceEnv } from '@hookline/evidence';
import { observabilityEnv } from '@hookline/observability';
import { parseDedicatedPools, POOL_PATTERNS } from '@hookline/queues';

/** The api's environment: the base variables plus its own (names, defaults, meaning). */
export const apiEnv = {
  ...baseEnv,
  PORT: { type: 'integer', default: 8080, minimum: 0, maximum: 65535 },
  HOST: { type: 'string', default: '0.0.0.0' },
  INGEST_PUBLIC_URL: { type: 'string', default: 'http://127.0.0.1:8081', description: 'Public base URL of ingest; hook URLs are `${INGEST_PUBLIC_URL}/in/{ingester_id}`' },
  ERRORS_BASE_URL: { type: 'string', default: 'https://hookline.dev/errors', description: 'Base URI of problem-detail `type` values' },
  JWT_SECRET: {
    type: 'string',
    default: 'hookline-dev-jwt-secret-change-me',
    minLength: 16,
    description: 'HS256 key for session JWTs issued by POST /auth/login (with NODE_ENV=production the public default is refused)',
    // Anyone could sign a session for any user with one of these: refused with NODE_ENV=production.
    publicValues: ['hookline-dev-jwt-secret-change-me', 'change-me-jwt-secret-at-least-32-chars', 'EXAMPLE-ONLY-replace-with-openssl-rand-base64-32'],
  },
  JWT_EXPIRES_IN: { type: 'string', default: '1h', description: 'Lifetime of session JWTs (jsonwebtoken syntax: 3600, "15m", "1h")' },
  RATE_LIMITS: {
    type: 'string',
    default: 'free=100/200,pro=600/1200,business=3000/6000,enterprise=10000/20000',
    description: 'Per-plan API rate limit: plan=<requests per minute>/<burst>, comma-separated',
  },
  MCP_KEY_RATE_LIMIT: {
    type: 'string',
    default: '60/120',
    description:
      "Default rate limit of each MCP key, <requests per minute>/<burst> (as a RATE_LIMITS entry), on top of its tenant's plan limit and never above it; a key created with its own rate_limit uses that instead",
  },
  LOGIN_MAX_FAILURES_PER_ACCOUNT: { type: 'integer', default: 10, minimum: 1, description: 'Failed POST /auth/login attempts per email within LOGIN_FAILURE_WINDOW_SECONDS; past it → 429 (a success resets it)' },
  LOGIN_MAX_FAILURES_PER_IP: { type: 'integer', default: 50, minimum: 1, description: 'Failed POST /auth/login attempts per client address (IPv6: per /64) within LOGIN_FAILURE_WINDOW_SECONDS; past it → 429' },
  LOGIN_FAILURE_WINDOW_SECONDS: { type: 'integer', default: 900, minimum: 1, maximum: 86400, description: 'Sliding window over which failed logins are counted' },
  TRUSTED_PROXIES: { type: 'string', default: '', description: "Comma-separated CIDRs (or loopback, linklocal, uniquelocal) whose X-Forwarded-For is believed for the client address; empty: the socket peer is the client" },
  SERVICE_SIGNATURE_TOLERANCE_SECONDS: { type: 'integer', default: 300, minimum: 1, description: 'Clock tolerance for HMAC-signed cluster requests' },
  API_BODY_LIMIT: { type: 'string', default: '1mb', description: 'Largest JSON body the control API accepts' },
  API_REQUEST_TIMEOUT_MS: {
    type: 'integer',
    default: 30_000,
    minimum: 100,
    description:
      "Time a client has to send a whole request, headers and body (Node's server.requestTimeout); past it the api answers 408 and closes the connection, dropping what it buffered. It does not cover the response: edge long-polls wait in their answer",
  },
  API_HEADERS_TIMEOUT_MS: {
    type: 'integer',
    default: 15_000,
    minimum: 100,
    description: "Time a client has to send a request's headers (Node's server.headersTimeout; at most API_REQUEST_TIMEOUT_MS, lowered to it if above); past it 408 and the connection is closed",
  },
  API_KEEP_ALIVE_TIMEOUT_MS: {
    type: 'integer',
    default: 5_000,
    minimum: 100,
    description: "An idle keep-alive connection is closed after this long (Node's server.keepAliveTimeout); behind a load balancer that reuses connections, set it above the balancer's idle timeout",
  },
  API_MAX_CONNECTIONS: {
    type: 'integer',
    default: 2_000,
    minimum: 0,
    description: 'Open connections the api accepts at most (server.maxConnections; edge long-polls hold one each); above it a new connection is closed at once. 0: no limit',
  },
  API_PUBLIC_URL: { type: 'string', default: 'http://127.0.0.1:8080', description: 'Public base URL of this api; the discovery documents link to each other and to /v1/mcp under it' },
  SOURCE_REPOSITORY_URL: { type: 'string', default: 'https://github.com/hookline/hookline', description: 'Source repository named in the capability manifest (`repository`)' },
  DEDICATED_POOLS: {
    type: 'string',
    default: '',
    pattern: POOL_PATTERNS.dedicatedPools,
    description: "tenant_id=pool,… as given to the router: retries and replays of these tenants' deliveries go to queue deliver.<pool> instead of deliver",
  },
  DELETE_CLOSE_INLINE_LIMIT: {
    type: 'integer',
    default: 10_000,
    minimum: 1,
    description:
      "Open deliveries a DELETE of a destination or flow moves to the DLQ in its own transaction (about 1 s per 10,000, holding the request and locks); the rest are moved by the deliverer's janitor, woken at once, a batch run per JANITOR_INTERVAL_MS",
  },
  FLOWS_PER_INGESTER_MAX: {
    type: 'integer',
    default: 100,
    minimum: 1,
    maximum: 10_000,
    description:
      "Delivery flows (not DELETED) one ingester may have: its fan-out, the deliveries each of its events makes. One event's deliveries are one router insert and one deliver job, shared by every tenant; a create or a move past it is 409 conflict (reason_code flow_limit_reached)",
  },
  IDEMPOTENCY_STALE_CLAIM_MS: {
    type: 'integer',
    default: 60_000,
    minimum: 1000,
    description:
      'An Idempotency-Key claim whose request has not been heard from for this long lost its request (its process died, or its outcome could not be stored): a retry then answers 409 idempotency-outcome-unknown when the handler may have started, and takes the claim over only when it never did; a running request refreshes its claim every quarter of this, however long it runs or waits on locks, so its retries answer 409 until it finishes',
  },
  ...evidenceEnv,
  ...observabilityEnv,
} as const satisfies EnvSchema;

export type ApiEnv = ConfigOf<typeof apiEnv>;

export type PlanName = 'free' | 'pro' | 'business' | 'enterprise';

export interface RateLimit {
  perMinute: number;
  burst: number;
}

export interface ApiConfig extends ApiEnv {
  rateLimits: Record<PlanName, RateLimit>;
  /** MCP_KEY_RATE_LIMIT parsed: the bucket of an MCP key without a limit of its own. */
  mcpKeyRateLimit: RateLimit;
  /** DEDICATED_POOLS parsed: tenant id → deliverer pool (absent: the default `deliver` queue). */
  pools: ReadonlyMap<string, string>;
  /** TRUSTED_PROXIES as express's `trust proxy` list (empty: trust no proxy). */
  trustedProxies: readonly string[];
  /** The HTTP server's limits (main.ts), from API_*_TIMEOUT_MS and API_MAX_CONNECTIONS. */
  httpServer: HttpServerLimits;
}

export interface HttpServerLimits {
  /** http.createServer options. */
  requestTimeout: number;
  headersTimeout: number;
  connectionsCheckingInterval: number;
  /** Set on the server after it is made. */
  keepAliveTimeout: number;
  /** null: no limit. */
  maxConnections: number | null;
}

/**
 * The HTTP server's limits. Node refuses a headersTimeout above requestTimeout, so it is
 * lowered to it. Node checks the two timeouts every connectionsCheckingInterval (default
 * 30 s, which would let a stalled request live up to twice API_REQUEST_TIMEOUT_MS): a
 * quarter of the shorter timeout, between 50 ms and 1 s.
 */
export function httpServerLimits(env: Pick<ApiEnv, 'API_REQUEST_TIMEOUT_MS' | 'API_HEADERS_TIMEOUT_MS' | 'API_KEEP_ALIVE_TIMEOUT_MS' | 'API_MAX_CONNECTIONS'>): HttpServerLimits {
  const requestTimeout = env.API_REQUEST_TIMEOUT_MS;
  const headersTimeout = Math.min(env.API_HEADERS_TIMEOUT_MS, requestTimeout);
  return {
    requestTimeout,
    headersTimeout,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
    keepAliveTimeout: env.API_KEEP_ALIVE_TIMEOUT_MS,
    maxConnections: env.API_MAX_CONNECTIONS > 0 ? env.API_MAX_CONNECTIONS : null,
  };
}

const PLANS: readonly PlanName[] = ['free', 'pro', 'business', 'enterprise'];

/** Parses `free=100/200,pro=600/1200,…`; every plan must be named once. */
export function parseRateLimits(spec: string): Record<PlanName, RateLimit> {
  const out: Partial<Record<PlanName, RateLimit>> = {};
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\w+)=(\d+)\/(\d+)$/.exec(part);
    const plan = m?.[1] as PlanName | undefined;
    // 0 would not be a limit: the bucket could never refill (and the limiter's script fails on it, which fails open).
    if (!m || !plan || !PLANS.includes(plan) || Number(m[2]) < 1 || Number(m[3]) < 1) throw new ConfigError([`RATE_LIMITS has a bad entry "${part}" (want plan=<per minute>/<burst>, both at least 1)`]);
    out[plan] = { perMinute: Number(m[2]), burst: Number(m[3]) };
  }
  const missing = PLANS.filter((p) => !out[p]);
  if (missing.length) throw new ConfigError([`RATE_LIMITS lacks ${missing.join(', ')}`]);
  return out as Record<PlanName, RateLimit>;
}

/**
 * Parses MCP_KEY_RATE_LIMIT: one `<per minute>/<burst>` as a RATE_LIMITS entry spells it,
 * both at least 1 (a key's bucket refills; 0 would refuse every call for good).
 */
export function parseMcpKeyRateLimit(spec: string): RateLimit {
  const m = /^(\d+)\/(\d+)$/.exec(spec.trim());
  const limit = m ? { perMinute: Number(m[1]), burst: Number(m[2]) } : undefined;
  if (!limit || limit.perMinute < 1 || limit.burst < 1) throw new ConfigError([`MCP_KEY_RATE_LIMIT "${spec}" is not <per minute>/<burst> with both at least 1`]);
  return limit;
}

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Parses TRUSTED_PROXIES (`10.0.0.0/8, ::1, loopback`); a bad entry stops the boot naming the variable. */
export function parseTrustedProxies(spec: string): string[] {
  const entries = spec.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = entries.filter((e) => {
    if (PROXY_NAMES.has(e)) return false;
    const [ip = '', bits, ...rest] = e.split('/');
    const family = isIP(ip);
    if (!family || rest.length) return true;
    if (bits === undefined) return false;
    return !/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128);
  });
  if (bad.length) throw new ConfigError([`TRUSTED_PROXIES has entries that are not addresses, CIDRs or loopback/linklocal/uniquelocal: ${bad.join(', ')}`]);
  return entries;
}

export function loadApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const base = loadConfig(apiEnv, env);
  let pools: ReadonlyMap<string, string>;
  try {
    pools = parseDedicatedPools(base.DEDICATED_POOLS);
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
  return {
    ...base,
    rateLimits: parseRateLimits(base.RATE_LIMITS),
    mcpKeyRateLimit: parseMcpKeyRateLimit(base.MCP_KEY_RATE_LIMIT),
    pools,
    trustedProxies: parseTrustedProxies(base.TRUSTED_PROXIES),
    httpServer: httpServerLimits(base),
  };
}
