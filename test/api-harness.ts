import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPrisma, type PrismaClient } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { createTestDatabase, flushPrefix, seedTenant, uniquePrefix, type SeededTenant, type TestDatabase } from '@hookline/testing';
import { buildApp, type ApiApp } from '../services/api/src/app';
import { loadApiConfig } from '../services/api/src/config';

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
  close(): Promise<void>;
}

/** The api in-process on 127.0.0.1:0 over a private schema and queue prefix. */
export async function startApi(label: string, env: Record<string, string> = {}): Promise<ApiHarness> {
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
  const redis = createRedis(config.REDIS_URL, 'producer');
  const producer = createProducer(redis, prefix);
  const api = buildApp({ prisma, pool: db.pool, redis, producer, config, logger: createLogger('api-test', 'error') });
  const server: Server = await new Promise((resolve) => {
    const s = api.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    },
    tenant: (opts) => seedTenant(db.pool, opts),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await producer.close();
      await flushPrefix(prefix);
      redis.disconnect();
      await prisma.$disconnect();
      await db.drop();
    },
  };
}
