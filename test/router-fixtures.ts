// Rows the router reads, inserted straight into a test schema.
import { newId, type Pool } from '@hookline/db';
import { createLogger, type Logger } from '@hookline/logger';
import { createProducer, createRedis, type JobData, type Producer, type QueueName, type Redis } from '@hookline/queues';
import { createTestDatabase, flushPrefix, seedTenant, uniquePrefix, type TestDatabase } from '@hookline/testing';
import { FlowCache, type ActiveFlow, type IngesterFlows } from '../services/router/src/flow-cache';
import type { RouteDeps } from '../services/router/src/route-events';

type State = 'DRAFT' | 'ACTIVE' | 'DISABLED' | 'DELETED';

export async function insertIngester(pool: Pool, tenantId: string, provider = 'generic'): Promise<string> {
  const id = newId('ing');
  await pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ($1, $2, 'in', $3, now())`, [id, tenantId, provider]);
  return id;
}

export async function insertDestination(pool: Pool, tenantId: string, state: State = 'ACTIVE'): Promise<string> {
  const id = newId('dst');
  await pool.query(`INSERT INTO destinations (id, tenant_id, name, url, state, updated_at) VALUES ($1, $2, 'out', 'http://127.0.0.1:9/hook', $3, now())`, [id, tenantId, state]);
  return id;
}

export async function insertFlow(pool: Pool, f: { tenantId: string; ingesterId: string; destinationId: string; filter?: unknown; state?: State }): Promise<string> {
  const id = newId('flw');
  await pool.query(`INSERT INTO delivery_flows (id, tenant_id, name, ingester_id, destination_id, filter, state, updated_at) VALUES ($1, $2, 'flow', $3, $4, $5, $6, now())`, [
    id,
    f.tenantId,
    f.ingesterId,
    f.destinationId,
    JSON.stringify(f.filter ?? {}),
    f.state ?? 'ACTIVE',
  ]);
  return id;
}

export interface EventSpec {
  tenantId: string;
  ingesterId: string;
  type?: string | null;
  status?: string;
  body?: string | Buffer;
  contentType?: string | null;
  headers?: Record<string, string>;
  query?: string | null;
  /** Milliseconds before now that the event was received and validated. */
  ageMs?: number;
}

/** An event already verified by ingest (`validated`, unless told), with its payload. */
export async function insertEvent(pool: Pool, e: EventSpec): Promise<string> {
  const id = newId('evt');
  await pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id, received_at, validated_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() - $7::int * interval '1 millisecond', now() - $7::int * interval '1 millisecond')`,
    [id, e.tenantId, e.ingesterId, e.type === undefined ? 'invoice.paid' : e.type, e.status ?? 'validated', `cor_${id}`, e.ageMs ?? 0],
  );
  await pool.query(`INSERT INTO event_payloads (event_id, tenant_id, content_type, headers, query, body) VALUES ($1, $2, $3, $4, $5, $6)`, [
    id,
    e.tenantId,
    e.contentType === undefined ? 'application/json' : e.contentType,
    JSON.stringify(e.headers ?? { 'content-type': 'application/json' }),
    e.query ?? null,
    Buffer.isBuffer(e.body) ? e.body : Buffer.from(e.body ?? '{"data":{"amount":100}}'),
  ]);
  return id;
}

export async function deliveriesOf(pool: Pool, eventIds: string[]): Promise<Array<{ id: string; event_id: string; flow_id: string; destination_id: string; tenant_id: string; status: string }>> {
  const { rows } = await pool.query(`SELECT id, event_id, flow_id, destination_id, tenant_id, status FROM deliveries WHERE event_id = ANY($1::text[]) ORDER BY id`, [eventIds]);
  return rows;
}

export async function eventState(pool: Pool, id: string): Promise<{ status: string; status_reason: string | null; filtered_at: Date | null }> {
  const { rows } = await pool.query(`SELECT status, status_reason, filtered_at FROM events WHERE id = $1`, [id]);
  return rows[0];
}

export interface RouterTestContext {
  db: TestDatabase;
  redis: Redis;
  prefix: string;
  producer: Producer;
  logger: Logger;
  tenantId: string;
  /** Job payloads waiting in a queue of this test's prefix. */
  waitingJobs<Q extends QueueName>(queue: Q): Promise<Array<JobData[Q]>>;
  close(): Promise<void>;
}

/** A private schema, queue prefix, producer and tenant for one test file. */
export async function openRouterTest(label: string): Promise<RouterTestContext> {
  const db = await createTestDatabase(label);
  const prefix = uniquePrefix(label);
  const redis = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'producer');
  const producer = createProducer(redis, prefix);
  const { tenantId } = await seedTenant(db.pool);
  return {
    db,
    redis,
    prefix,
    producer,
    logger: createLogger('router-test', 'error'),
    tenantId,
    async waitingJobs(queue) {
      return (await producer.queue(queue).getJobs(['waiting', 'delayed', 'prioritized'])).map((j) => j.data);
    },
    async close() {
      await producer.close();
      redis.disconnect();
      await flushPrefix(prefix);
      await db.drop();
    },
  };
}

/** routeEvents' deps on the test's schema and queues, with a flow cache that keeps nothing. */
export function routeDepsOf(t: RouterTestContext): RouteDeps {
  return { pool: t.db.pool, producer: t.producer, flows: new FlowCache(t.db.pool, 0), logger: t.logger };
}

/**
 * An ingester of the test's tenant (`provider`, default generic) with one ACTIVE flow to its
 * own ACTIVE destination per filter given (one without a filter when none is).
 */
export async function ingesterWithFlows(t: RouterTestContext, filters: unknown[] = [undefined], provider = 'generic'): Promise<{ ingesterId: string; flowIds: string[] }> {
  const ingesterId = await insertIngester(t.db.pool, t.tenantId, provider);
  const flowIds: string[] = [];
  for (const filter of filters) {
    const destinationId = await insertDestination(t.db.pool, t.tenantId);
    flowIds.push(await insertFlow(t.db.pool, { tenantId: t.tenantId, ingesterId, destinationId, ...(filter === undefined ? {} : { filter }) }));
  }
  return { ingesterId, flowIds };
}

/** An ingester of the test's tenant with one ACTIVE flow to an ACTIVE destination; its id. */
export async function ingesterWithFlow(t: RouterTestContext): Promise<string> {
  return (await ingesterWithFlows(t)).ingesterId;
}

/** A flow cache (caching nothing) whose flows' filters write `entry(flow id)` to `log` each time they run. */
export class WatchedFlowCache extends FlowCache {
  constructor(
    pool: Pool,
    private readonly log: string[],
    private readonly entry: (flowId: string) => string = (id) => `eval:${id}`,
  ) {
    super(pool, 0);
  }

  override async lookup(tenantOf: Map<string, string>): Promise<Map<string, IngesterFlows>> {
    const out = new Map<string, IngesterFlows>();
    for (const [id, e] of await super.lookup(tenantOf)) {
      const flows = e.flows.map((f): ActiveFlow => {
        const filter = f.filter;
        return { ...f, filter: { ...filter, acceptsType: (ty) => filter.acceptsType(ty), matches: (doc, budget) => (this.log.push(this.entry(f.id)), filter.matches(doc, budget)) } };
      });
      out.set(id, { ...e, flows });
    }
    return out;
  }
}
