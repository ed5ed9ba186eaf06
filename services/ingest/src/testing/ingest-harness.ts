import { loadConfig } from '@hookline/config';
import { createPool, newId, type Pool } from '@hookline/db';
import { createLogger, type Logger } from '@hookline/logger';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { createSecretBox, type Provider } from '@hookline/signing';
import { createTestDatabase, flushPrefix, seedTenant, uniquePrefix, type TestDatabase } from '@hookline/testing';
import { createIngestApp, type IngestApp } from '../app';
import { ingestEnv, trustedProxies } from '../config';

export const TEST_SECRETS_KEY = 'ingest-tests-secrets-key-0123456789';
export const TEST_PUBLIC_URL = 'https://hooks.example.test';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface HarnessOptions {
  label: string;
  /** Extra environment for the app (e.g. PAYLOAD_LIMIT_BYTES). */
  env?: Record<string, string>;
  /** Where the app's pool points, given the test schema's URL (default: that URL). */
  appDatabaseUrl?: (testDatabaseUrl: string) => string;
  /** Where the app's Redis connections point (default: local Redis). */
  appRedisUrl?: string;
}

export interface HookResponse {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
}

export interface IngestHarness {
  db: TestDatabase;
  prefix: string;
  url: string;
  app: IngestApp;
  /** A producer of the test's own, to read queued jobs. */
  jobs: Producer;
  /** The app's config-change subscriber (a test may cut it to make it reconnect). */
  subscriber: Redis;
  /** The app's logger (a test may spy on it). */
  logger: Logger;
  seedIngester(opts?: { plan?: 'free' | 'pro' | 'business' | 'enterprise'; provider?: Provider; secrets?: string[]; config?: Record<string, unknown>; state?: string; tenantId?: string }): Promise<{ tenantId: string; ingesterId: string }>;
  post(pathAfterIn: string, body: string | Buffer, headers?: Record<string, string>): Promise<HookResponse>;
  routedEventIds(): Promise<string[]>;
  close(): Promise<void>;
}

/** Ingest in-process on 127.0.0.1:0 against a private schema and queue prefix. */
export async function startIngestHarness(opts: HarnessOptions): Promise<IngestHarness> {
  const db = await createTestDatabase(opts.label);
  const prefix = uniquePrefix(opts.label);
  const config = loadConfig(ingestEnv, {
    DATABASE_URL: opts.appDatabaseUrl ? opts.appDatabaseUrl(db.url) : db.url,
    REDIS_URL: opts.appRedisUrl ?? REDIS_URL,
    QUEUE_PREFIX: prefix,
    SECRETS_KEY: TEST_SECRETS_KEY,
    INGEST_PUBLIC_URL: TEST_PUBLIC_URL,
    INGEST_ENQUEUE_TIMEOUT_MS: '1000',
    ...opts.env,
  });
  const logger = createLogger('ingest-test', 'error');
  // Outage tests provoke errors on purpose; INGEST_TEST_LOGS=1 shows them.
  logger.silent = !process.env.INGEST_TEST_LOGS;
  const pool: Pool = opts.appDatabaseUrl ? createPool(config.DATABASE_URL, 4) : db.pool;
  const redis: Redis = createRedis(config.REDIS_URL, 'producer', undefined, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS });
  const subscriber: Redis = createRedis(config.REDIS_URL, 'worker');
  const producer = createProducer(redis, prefix);
  const jobsRedis = createRedis(REDIS_URL, 'producer');
  const jobs = createProducer(jobsRedis, prefix);
  const app = createIngestApp({ config, trustedProxies: trustedProxies(config.TRUSTED_PROXIES), pool, producer, redis, subscriber, logger });
  const url = await app.listen(0, '127.0.0.1');
  const box = createSecretBox(TEST_SECRETS_KEY);

  return {
    db,
    prefix,
    url,
    app,
    jobs,
    subscriber,
    logger,
    async seedIngester(o = {}) {
      const tenantId = o.tenantId ?? (await seedTenant(db.pool, { plan: o.plan ?? 'free' })).tenantId;
      const ingesterId = newId('ing');
      await db.pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, config, secrets, state, updated_at) VALUES ($1, $2, 'test', $3, $4, $5, $6, now())`, [
        ingesterId,
        tenantId,
        o.provider ?? 'generic',
        JSON.stringify(o.config ?? {}),
        (o.secrets ?? []).map((s) => box.seal(s)),
        o.state ?? 'ACTIVE',
      ]);
      return { tenantId, ingesterId };
    },
    async post(pathAfterIn, body, headers = {}) {
      const res = await fetch(`${url}/in/${pathAfterIn}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
      const text = await res.text();
      return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    },
    async routedEventIds() {
      // Route jobs leave after the answers (gathered over INGEST_ROUTE_LINGER_MS): wait for them.
      await app.batcher.drain();
      const list = await jobs.queue('route').getJobs(['waiting', 'delayed', 'active', 'prioritized']);
      return list.flatMap((j) => (j.data as { eventIds: string[] }).eventIds);
    },
    async close() {
      await app.close(2000);
      await producer.close().catch(() => undefined);
      await jobs.close().catch(() => undefined);
      for (const r of [redis, subscriber, jobsRedis]) r.disconnect();
      if (pool !== db.pool) await pool.end().catch(() => undefined);
      await flushPrefix(prefix);
      await db.drop();
    },
  };
}
