import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPrisma, type PrismaClient } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, redisReady, type Producer, type Redis } from '@hookline/queues';
import { createTestDatabase, flushPrefix, seedTenant, uniquePrefix, type SeededTenant, type TestDatabase } from '@hookline/testing';
import { buildApp, type ApiApp } from '../services/api/src/app';
import { loadApiConfig } from '../services/api/src/config';
import { createResponseChecker } from '../services/api/src/openapi/response-checker';
import { defaultPlugins } from '../services/api/src/plugins';

/** The problem type of a 400 validation error (RFC 9457 `type`). */
export const VALIDATION = 'https://hookline.dev/errors/validation-error';

/** A tenant and an API key of it, as tests make them. */
export type ApiTenant = { tenantId: string; apiKey: string };

export interface ApiResponse {
  status: number;
  headers: Headers;
  // Tests read arbitrary JSON; the OpenAPI test checks the shapes.
  body: any;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  /** Skip the OpenAPI conformance check (only for deliberately undocumented requests). */
  unchecked?: boolean;
}

export interface ApiHarness {
  url: string;
  db: TestDatabase;
  prisma: PrismaClient;
  redis: Redis;
  producer: Producer;
  prefix: string;
  api: ApiApp;
  call(method: string, path: string, opts?: CallOptions): Promise<ApiResponse>;
  tenant(opts?: Parameters<typeof seedTenant>[1]): Promise<SeededTenant>;
  /** A second api process-equivalent on the same PostgreSQL and Redis (another replica). */
  replica(): Promise<string>;
  close(): Promise<void>;
}

/** The api in-process on 127.0.0.1:0 over a private schema and queue prefix. */
export async function startApi(label: string, env: Record<string, string> = {}, opts: { quiet?: boolean } = {}): Promise<ApiHarness> {
  const db = await createTestDatabase(label);
  const prefix = uniquePrefix(label);
  const config = loadApiConfig({
    DATABASE_URL: db.url,
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    INGEST_PUBLIC_URL: 'http://127.0.0.1:9999',
    RATE_LIMITS: 'free=100000/100000,pro=100000/100000,business=100000/100000,enterprise=100000/100000',
    ...env,
  });
  const prisma = createPrisma(db.url, 3);
  const redis = createRedis(config.REDIS_URL, 'producer', undefined, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS });
  // The rate limiter fails open while Redis is unreachable: start only once connected.
  if (!(await redisReady(redis, 20_000))) throw new Error('Redis did not connect');
  const producer = createProducer(redis, prefix);
  const logger = createLogger('api-test', 'error');
  // Files that provoke 500s on purpose keep the output readable.
  logger.silent = opts.quiet ?? false;
  // The same plugins as main.ts, so the OpenAPI walk and the conformance check cover them.
  const plugins = defaultPlugins(config, { ...process.env, ...env });
  const api = buildApp({ prisma, pool: db.pool, redis, producer, config, logger }, plugins);
  const servers: Server[] = [];
  const listen = async (a: ApiApp): Promise<string> => {
    const server: Server = await new Promise((resolve) => {
      const s = a.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const url = await listen(api);
  // Every response of the api tests is checked against the served OpenAPI document.
  const conformance = createResponseChecker(api.openApi());
  return {
    url,
    db,
    prisma,
    redis,
    producer,
    prefix,
    api,
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.key ? { 'x-api-key': opts.key } : {}), ...opts.headers };
      let body: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${url}${path}`, { method, headers, body });
      const text = await res.text();
      const parsed = text ? JSON.parse(text) : undefined;
      if (!opts.unchecked) {
        const problems = conformance.check(method, path, res.status, parsed);
        if (problems.length) throw new Error(`response does not match the OpenAPI document:\n${problems.join('\n')}\n${text.slice(0, 500)}`);
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
    tenant: (opts) => seedTenant(db.pool, opts),
    replica: () => listen(buildApp({ prisma, pool: db.pool, redis, producer, config, logger }, plugins)),
    async close() {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      }
      await producer.close();
      await flushPrefix(prefix);
      redis.disconnect();
      await prisma.$disconnect();
      await db.drop();
    },
  };
}
