import type { IncomingHttpHeaders } from 'node:http';
import type { Pool, PrismaClient } from '@hookline/db';
import type { Logger } from '@hookline/logger';
import type { Producer, Redis } from '@hookline/queues';
import type { SecretBox } from '@hookline/signing';
import type { ApiConfig, PlanName } from './config';

/** What the api needs from the outside world; main.ts builds it, tests build their own. */
export interface ApiDeps {
  prisma: PrismaClient;
  pool: Pool;
  /**
   * A small pool of its own for Idempotency-Key heartbeats (limits/idempotency.ts), so that
   * requests holding every connection of `pool` while they wait on locks cannot starve the
   * beats that keep their own claims alive. Absent: `pool`.
   */
  claimPool?: Pool;
  redis: Redis;
  producer: Producer;
  config: ApiConfig;
  logger: Logger;
}

/** Deps plus things derived once from config. */
export interface AppContext extends ApiDeps {
  box: SecretBox;
  /** Aborted once the api drains (SIGTERM): long-polls answer at once instead of waiting. */
  draining: AbortSignal;
}

/** Who is calling: an API key, a logged-in user (JWT) or an enrolled cluster (HMAC). */
export interface Principal {
  kind: 'api_key' | 'user' | 'cluster';
  id: string;
  tenantId: string;
  plan: PlanName;
  scopes: ReadonlySet<string>;
  /** An API key's own expiry (null: none); absent for other credentials. */
  expiresAt?: Date | null;
}

export function actorOf(p: Principal): string {
  return `${p.kind}:${p.id}`;
}

/** Everything a route handler sees; handlers never touch express objects. */
export interface RequestContext {
  app: AppContext;
  principal: Principal;
  /** The tenant the request acts on (path `{tid}`, `X-Tenant-ID`, or the credential's). */
  tenantId: string;
  requestId: string;
  /** The caller's address (the socket peer, or X-Forwarded-For behind TRUSTED_PROXIES). */
  clientAddress: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: IncomingHttpHeaders;
  logger: Logger;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
