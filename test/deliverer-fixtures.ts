// A deliverer in the test process: real PostgreSQL schema, real Redis prefix, rows
// inserted with SQL, `deliverBatch` called directly or through a real BullMQ worker.
import { loadConfig } from '@hookline/config';
import { Client } from 'pg';
import { newId, parseDatabaseUrl } from '@hookline/db';
import { shownStatusSql } from '@hookline/delivery';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, createWorker, type Producer, type Redis, type WorkerHandle } from '@hookline/queues';
import { createSecretBox, newWhsecSecret, type SecretBox } from '@hookline/signing';
import { createTestDatabase, flushPrefix, seedTenant, uniquePrefix, type TestDatabase } from '@hookline/testing';
import { delivererEnv, type DelivererConfig } from '../services/deliverer/src/config';
import { deliverBatch, type BatchSummary, type DeliverDeps } from '../services/deliverer/src/deliver-batch';
import { buildDeliverDeps } from '../services/deliverer/src/deliverer-deps';
import { insertEvent, insertFlow, insertIngester } from './router-fixtures';

export interface DestinationSpec {
  config?: Record<string, unknown>;
  /** Plain whsec_ secrets, newest first; one is generated when omitted. */
  secrets?: string[];
  method?: string;
  clusterId?: string | null;
}

export interface DeliveryRow {
  id: string;
  /** As the API shows it: `delivering` while a live lease holds it. */
  status: string;
  /** As stored: a held delivery keeps its claimable status. */
  stored_status: string;
  lease_until: Date | null;
  /** An open delivery of a DISABLED destination (migration 20261124000000_held_deliveries). */
  held: boolean;
  /** When `held` last became true; NULL when cleared (migration 20261125000000_held_expiry). */
  held_since: Date | null;
  attempt_count: number;
  next_attempt_at: Date;
  lease_owner: string | null;
  last_error: string | null;
  last_status_code: number | null;
  delivered_at: Date | null;
  exhausted_at: Date | null;
  updated_at: Date;
}

export interface AttemptRow {
  number: number;
  status_code: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
  error_kind: string | null;
  error: string | null;
  started_at: Date;
  duration_ms: number;
}

/** Test defaults: a short retry schedule and loopback allowed (SSRF tests override it). */
export const TEST_ENV: Record<string, string> = { RETRY_SCHEDULE_MS: '50,100,150,200', SSRF_ALLOWLIST: '127.0.0.0/8,::1/128', LOG_LEVEL: 'error' };

export async function createHarness(label: string, env: Record<string, string> = {}) {
  const db = await createTestDatabase(label);
  const prefix = uniquePrefix(label);
  const box: SecretBox = createSecretBox(delivererEnv.SECRETS_KEY.default);
  const { tenantId } = await seedTenant(db.pool);
  const ingesterId = await insertIngester(db.pool, tenantId);
  const closers: (() => Promise<unknown>)[] = [];
  const logger = createLogger('deliverer-test', 'error');

  /** One more deliverer "replica" on the same schema and prefix, with its own connections. */
  const replica = (extraEnv: Record<string, string> = {}): { deps: DeliverDeps; config: DelivererConfig } => {
    const config = loadConfig(delivererEnv, { ...TEST_ENV, DATABASE_URL: db.url, QUEUE_PREFIX: prefix, ...env, ...extraEnv });
    const redis = createRedis(config.REDIS_URL, 'worker');
    const producer: Producer = createProducer(redis, config.QUEUE_PREFIX);
    const deps = buildDeliverDeps(config, { pool: db.pool, redis, producer, logger });
    closers.push(() => deps.sender.close(), () => producer.close(), () => redis.quit());
    return { deps, config };
  };
  const main = replica();
  const redis: Redis = main.deps.redis;

  return {
    db,
    prefix,
    tenantId,
    box,
    redis,
    deps: main.deps,
    config: main.config,
    replica,
    async destination(url: string, spec: DestinationSpec = {}): Promise<{ id: string; secrets: string[] }> {
      const id = newId('dst');
      const secrets = spec.secrets ?? [newWhsecSecret()];
      await db.pool.query(
        `INSERT INTO destinations (id, tenant_id, cluster_id, name, url, method, config, secrets, updated_at) VALUES ($1, $2, $3, 'rx', $4, $5, $6, $7, now())`,
        [id, tenantId, spec.clusterId ?? null, url, spec.method ?? 'POST', JSON.stringify(spec.config ?? {}), secrets.map((s) => box.seal(s))],
      );
      return { id, secrets };
    },
    /** An event (body, content type, type) routed to `destinationId`: one pending delivery. */
    async delivery(destinationId: string, e: { body?: Buffer | string; contentType?: string | null; type?: string | null } = {}): Promise<{ deliveryId: string; eventId: string }> {
      const eventId = await insertEvent(db.pool, { tenantId, ingesterId, status: 'filtered', ...e });
      const flowId = await insertFlow(db.pool, { tenantId, ingesterId, destinationId });
      const deliveryId = newId('dlv');
      await db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id) VALUES ($1, $2, $3, $4, $5)`, [deliveryId, tenantId, eventId, flowId, destinationId]);
      return { deliveryId, eventId };
    },
    run: (deliveryIds: string[], deps: DeliverDeps = main.deps): Promise<BatchSummary> => deliverBatch(deps, { v: 1, deliveryIds }),
    enqueue: (deliveryIds: string[]) => main.deps.producer.add('deliver', { v: 1, deliveryIds }),
    /** A real BullMQ worker running `deliverBatch` (retries arrive as delayed jobs). */
    startWorker(concurrency = 4): void {
      const connection = createRedis(main.config.REDIS_URL, 'worker');
      const w: WorkerHandle = createWorker('deliver', connection, prefix, concurrency, async (data) => {
        await deliverBatch(main.deps, data);
      }, () => undefined);
      closers.unshift(async () => {
        await w.close();
        await connection.quit();
      });
    },
    async row(deliveryId: string): Promise<DeliveryRow> {
      return (await db.pool.query<DeliveryRow>(`SELECT d.*, d.status::text AS stored_status, ${shownStatusSql('d')} AS status FROM deliveries d WHERE id = $1`, [deliveryId])).rows[0]!;
    },
    async attempts(deliveryId: string): Promise<AttemptRow[]> {
      return (await db.pool.query<AttemptRow>('SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY number', [deliveryId])).rows;
    },
    /**
     * A connection of its own holding the event's row lock in an open transaction: outcome
     * writes of its deliveries wait for it inside PostgreSQL. The caller ends the
     * transaction and the connection.
     */
    async lockEvent(eventId: string): Promise<Client> {
      const holder = new Client({ connectionString: parseDatabaseUrl(db.url).connectionString });
      await holder.connect();
      await holder.query(`SET search_path TO "${db.schema}"`);
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM events WHERE id = $1 FOR UPDATE', [eventId]);
      return holder;
    },
    async event(eventId: string): Promise<{ status: string; status_reason: string | null; delivered_at: Date | null; failed_at: Date | null }> {
      return (await db.pool.query('SELECT status, status_reason, delivered_at, failed_at FROM events WHERE id = $1', [eventId])).rows[0];
    },
    async close(): Promise<void> {
      for (const c of closers) await c().catch(() => undefined);
      await flushPrefix(prefix);
      await db.drop();
    },
  };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;
export type { TestDatabase };
