// The MCP and discovery routers in an express app of the test, on 127.0.0.1:0, over a
// private schema and queue prefix; data is inserted with SQL as the pipeline would write it.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createPrisma, newId, type PrismaClient } from '@hookline/db';
import { cachedDiscovery, evidenceKey, issueReceipts, sealWindow } from '@hookline/evidence';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, redisReady, type Producer, type Redis } from '@hookline/queues';
import { createTestDatabase, flushPrefix, seedTenant, uniquePrefix, type SeededTenant, type TestDatabase } from '@hookline/testing';
import { createSecretBox } from '@hookline/signing';
import { loadApiConfig, parseMcpKeyRateLimit, parseRateLimits } from '../services/api/src/config';
import { createDiscoveryRouter, REPO_ROOT } from '../services/api/src/discovery/discovery.routes';
import { errorMiddleware, notFoundMiddleware } from '../services/api/src/http/error.middleware';
import type { McpDeps } from '../services/api/src/mcp/mcp-deps';
import { createMcpRouter } from '../services/api/src/mcp/mcp.routes';
import { insertDestination, insertEvent, insertFlow, insertIngester } from './router-fixtures';

export const TEST_EVIDENCE_KEY = evidenceKey('test-secrets-key-0123456789abcdef');

export interface HttpReply {
  status: number;
  headers: Headers;
  // Tests read arbitrary JSON.
  body: any;
}

export interface McpHarness {
  url: string;
  db: TestDatabase;
  redis: Redis;
  producer: Producer;
  prefix: string;
  deps: McpDeps;
  http(method: string, path: string, opts?: { headers?: Record<string, string>; body?: unknown }): Promise<HttpReply>;
  /** An SDK client connected with this MCP key (or none). */
  client(mcpKey?: string): Promise<Client>;
  close(): Promise<void>;
}

/**
 * `rateLimits` as RATE_LIMITS spells it, `mcpKeyRateLimit` as MCP_KEY_RATE_LIMIT does; by
 * default too high for a test to reach (a key's limit is capped at its plan's).
 */
export async function startMcp(label: string, opts: { rateLimits?: string; mcpKeyRateLimit?: string } = {}): Promise<McpHarness> {
  const db = await createTestDatabase(label);
  const prefix = uniquePrefix(label);
  const redis = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'producer');
  // The rate limiter fails open while Redis is not connected yet (a producer connection has
  // no offline queue): a first request served unlimited would throw every count off.
  if (!(await redisReady(redis, 20_000))) throw new Error('Redis did not connect');
  const producer = createProducer(redis, prefix);
  const clients: Client[] = [];
  let url = '';
  const deps: McpDeps = {
    pool: db.pool,
    redis,
    producer,
    logger: createLogger('mcp-test', 'error'),
    queuePrefix: prefix,
    rateLimits: parseRateLimits(opts.rateLimits ?? 'free=100000/100000,pro=100000/100000,business=100000/100000,enterprise=100000/100000'),
    mcpKeyRateLimit: parseMcpKeyRateLimit(opts.mcpKeyRateLimit ?? '100000/100000'),
    build: { version: '0.1.0-test', commit: null },
    discovery: cachedDiscovery({
      repoRoot: REPO_ROOT,
      get baseUrl() {
        return url;
      },
      repository: 'https://github.com/hookline/hookline',
      evidenceScope: 'local_mock_harness_only',
      sealIntervalMs: 15000,
      windowMs: 60000,
    }),
  };
  const app = express();
  app.use(createMcpRouter(deps));
  app.use(createDiscoveryRouter(deps));
  // As in the api: whatever no router answered is a 404 problem.
  app.use(notFoundMiddleware);
  app.use(errorMiddleware(deps.logger));
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    db,
    redis,
    producer,
    prefix,
    deps,
    async http(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${url}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    },
    async client(mcpKey) {
      const c = new Client({ name: 'hookline-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${url}/v1/mcp`), { requestInit: { headers: mcpKey === undefined ? {} : { 'X-MCP-API-Key': mcpKey } } });
      await c.connect(transport);
      clients.push(c);
      return c;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await producer.close();
      redis.disconnect();
      await flushPrefix(prefix);
      await db.drop();
    },
  };
}

/** A tool call's structured result, or its problem details when it failed. */
export async function callTool(c: Client, name: string, args: Record<string, unknown> = {}): Promise<{ isError: boolean; body: any }> {
  const r = await c.callTool({ name, arguments: args });
  const text = (r.content as { type: string; text: string }[])[0]!.text;
  return { isError: r.isError === true, body: r.isError ? JSON.parse(text) : r.structuredContent };
}

/** Creates an MCP key through the key-management API with the tenant's API key. */
export async function mcpKey(h: McpHarness, t: SeededTenant, scopes?: string[]): Promise<{ id: string; key: string }> {
  const res = await h.http('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { headers: { 'x-api-key': t.apiKey }, body: { name: 'agent', ...(scopes ? { scopes } : {}) } });
  if (res.status !== 201) throw new Error(`mcp key creation failed: ${JSON.stringify(res.body)}`);
  return { id: res.body.id, key: res.body.key };
}

export interface TenantData {
  tenant: SeededTenant;
  ingesterId: string;
  destinationId: string;
  eventId: string;
  /** Exhausted after two failed attempts; payload retained. */
  exhaustedId: string;
  /** Delivered on its first attempt. */
  deliveredId: string;
  clusterId: string;
}

/** A tenant with an ingester, a destination, an event fanned out to two deliveries, attempts, receipts sealed into a root, a cluster. */
export async function seedTenantData(h: McpHarness): Promise<TenantData> {
  const pool = h.db.pool;
  const tenant = await seedTenant(pool);
  const { tenantId } = tenant;
  const ingesterId = await insertIngester(pool, tenantId);
  const destinationId = await insertDestination(pool, tenantId);
  const other = await insertDestination(pool, tenantId);
  const eventId = await insertEvent(pool, { tenantId, ingesterId, status: 'dlq_queued' });
  const flows = [await insertFlow(pool, { tenantId, ingesterId, destinationId }), await insertFlow(pool, { tenantId, ingesterId, destinationId: other })];
  const exhaustedId = newId('dlv');
  const deliveredId = newId('dlv');
  await pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, exhausted_at, delivered_at) VALUES
       ($1, $3, $4, $5, $6, 'exhausted', 2, now(), NULL), ($2, $3, $4, $7, $8, 'delivered', 1, NULL, now())`,
    [exhaustedId, deliveredId, tenantId, eventId, flows[0], destinationId, flows[1], other],
  );
  const attempt = (deliveryId: string, n: number, status: number) =>
    pool.query(`INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, started_at, duration_ms) VALUES ($1, $2, $3, $4, $5, $6, now(), 12)`, [
      newId('att'), tenantId, deliveryId, n, status, status === 200 ? 'ok' : 'upstream down',
    ]);
  await attempt(exhaustedId, 1, 503);
  await attempt(exhaustedId, 2, 503);
  await attempt(deliveredId, 1, 200);
  await issueReceipts(pool, TEST_EVIDENCE_KEY);
  await sealWindow(pool, TEST_EVIDENCE_KEY, tenantId, { start: new Date(0), end: new Date(Date.now() + 60_000) });
  const clusterId = newId('cls');
  await pool.query(`INSERT INTO clusters (id, tenant_id, name, key_encrypted, last_seen_at) VALUES ($1, $2, 'edge-eu', 'v1.x.y.z', now())`, [clusterId, tenantId]);
  await pool.query(`INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code) VALUES ($1, $2, $3, 'provider_verification_failed')`, [newId('rej'), tenantId, ingesterId]);
  return { tenant, ingesterId, destinationId, eventId, exhaustedId, deliveredId, clusterId };
}

/**
 * Gives the harness the api's context, as mcp.plugin.ts passes it (the write tools run the
 * api's own code on it). Returns its Prisma client, to disconnect after.
 */
export function attachApiContext(h: McpHarness): PrismaClient {
  const config = loadApiConfig({ DATABASE_URL: h.db.url, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', QUEUE_PREFIX: h.prefix });
  const prisma = createPrisma(h.db.url, 1);
  const { pool, redis, producer, logger } = h.deps;
  h.deps.app = { prisma, pool, redis, producer, logger, config, box: createSecretBox(config.SECRETS_KEY), draining: new AbortController().signal };
  return prisma;
}

/** Two seeded tenants and an MCP key of the first with `scopes`: an SDK client on it, and its header for the REST mirrors. */
export async function twoTenantsWithKey(h: McpHarness, scopes: string[]): Promise<{ mine: TenantData; theirs: TenantData; client: Client; headers: Record<string, string> }> {
  const mine = await seedTenantData(h);
  const theirs = await seedTenantData(h);
  const key = await mcpKey(h, mine.tenant, scopes);
  return { mine, theirs, client: await h.client(key.key), headers: { 'x-mcp-api-key': key.key } };
}
