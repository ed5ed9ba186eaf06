// The statements the api sends for time windows and lookups read indexes, not the tenant's
// (or every tenant's) whole history (migration 20261204000000_list_indexes and
// services/api/src/http/id-window.ts):
// - the 24 h counts (/v1/overview, /v1/sources, target health) and the since/until of the
//   lists also bound the id, so (tenant_id, id), the primary key or (ingester_id, id) read
//   the window and an hour on either side;
// - a trace by correlation id reads its since/until window (it has no index: a random id on
//   every event's writes cost ingest about 10 %), and a resource's audit entries (MCP logs)
//   have their index.
// With 40,000 rows of each kind over 60 days (about 700 a day), each statement here read
// them all before. The rows found are the same (test/api-list-windows.test.ts).
import { createPrisma, type PrismaClient } from '@hookline/db';
import { createTestDatabase, seedTenant, type TestDatabase } from '@hookline/testing';
import type { Pool } from 'pg';
import type { AppContext } from '../services/api/src/context';
import { listDeliveries } from '../services/api/src/deliveries/delivery.queries';
import type { McpDeps } from '../services/api/src/mcp/mcp-deps';
import { logsFor } from '../services/api/src/mcp/mcp-logs';
import { listTenantAttempts } from '../services/api/src/runtime/attempts';
import { overview, sources } from '../services/api/src/runtime/overview';
import { targetHealth } from '../services/api/src/runtime/target-health';
import { traces } from '../services/api/src/runtime/traces';
import { explainAnalyze, planReads, type PlanNode, type PlanReads } from './support/plan-reads';

let db: TestDatabase;
let prisma: PrismaClient;
let tenantId: string;
/** The statements the Prisma client sent since the last `sent.length = 0`. */
const sent: { text: string; values: unknown[] }[] = [];
const N = 40_000;
const DAYS = 60;
const DAY = 24 * 60 * 60 * 1000;
/** About a day and two hours of rows (the window and the hour of slack on each side), with room. */
const WINDOW_READS = 2_000;

beforeAll(async () => {
  db = await createTestDatabase('winplans');
  tenantId = (await seedTenant(db.pool)).tenantId;
  const other = (await seedTenant(db.pool)).tenantId;
  prisma = createPrisma(db.url, 2, {
    instrumentPool: (p) => {
      const query = p.query.bind(p) as (...a: unknown[]) => unknown;
      p.query = ((cfg: unknown, ...rest: unknown[]) => {
        if (cfg && typeof cfg === 'object' && 'text' in cfg) {
          const c = cfg as { text: string; values?: unknown[] };
          sent.push({ text: c.text, values: c.values ?? [] });
        }
        return query(cfg, ...rest);
      }) as typeof p.query;
      return p;
    },
  });
  const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
  // Ids as the services make them: the time part (48-bit ms, Crockford base32) leads.
  await q(`CREATE FUNCTION id_at(prefix text, at timestamptz, n bigint) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE a text := '0123456789abcdefghjkmnpqrstvwxyz'; r text := ''; t bigint := (extract(epoch FROM at) * 1000)::bigint;
    BEGIN FOR i IN 1..10 LOOP r := substr(a, (t % 32)::int + 1, 1) || r; t := t / 32; END LOOP; RETURN prefix || '_' || r || lpad(n::text, 16, '0'); END $$`);
  await q(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ('ing_busy', $1, 'busy', 'generic', now()), ('ing_rare', $1, 'rare', 'stripe', now()), ('ing_other', $2, 'o', 'generic', now())`, [tenantId, other]);
  // Ingesters with no traffic: /v1/sources counts them too.
  await q(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) SELECT 'ing_idle_' || i, $1, 'idle' || i, 'github', now() FROM generate_series(1, 10) i`, [tenantId]);
  await q(`INSERT INTO destinations (id, tenant_id, name, url, updated_at) VALUES ('dst_busy', $1, 'd', 'http://127.0.0.1:9/', now()), ('dst_other', $2, 'o', 'http://127.0.0.1:9/', now())`, [tenantId, other]);
  // N events over DAYS days, newest a minute ago; one in 400 on the rare ingester; one in 5 of the other tenant.
  await q(`CREATE TEMP TABLE g AS SELECT i, now() - interval '1 minute' - (${N} - i) * (interval '${DAYS} days' / ${N}) AS at FROM generate_series(1, ${N}) i`);
  await q(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id, received_at)
     SELECT id_at('evt', at, i), CASE WHEN i % 5 = 0 THEN $2 ELSE $1 END, CASE WHEN i % 5 = 0 THEN 'ing_other' WHEN i % 400 = 1 THEN 'ing_rare' ELSE 'ing_busy' END,
            'delivered', md5(i::text), at FROM g`,
    [tenantId, other],
  );
  await q(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, created_at)
     SELECT id_at('dlv', at, i), CASE WHEN i % 5 = 0 THEN $2 ELSE $1 END, id_at('evt', at, i), 'flw_x', CASE WHEN i % 5 = 0 THEN 'dst_other' ELSE 'dst_busy' END, 'delivered', 1, at FROM g`,
    [tenantId, other],
  );
  await q(
    `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, started_at, duration_ms)
     SELECT id_at('att', at, i), CASE WHEN i % 5 = 0 THEN $2 ELSE $1 END, id_at('dlv', at, i), 1, 200, at, 10 FROM g`,
    [tenantId, other],
  );
  await q(
    `INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code, created_at)
     SELECT id_at('rej', at, i), CASE WHEN i % 5 = 0 THEN $2 ELSE $1 END, CASE WHEN i % 5 = 0 THEN 'ing_other' ELSE 'ing_busy' END, 'signature_mismatch', at FROM g`,
    [tenantId, other],
  );
  // Audit entries on 200 resources.
  await q(
    `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, outcome, created_at)
     SELECT id_at('aud', at, i), $1, 'api_key:x', 'destinations.update', 'dst_' || lpad((i % 200)::text, 26, '0'), 'success', at FROM g`,
    [tenantId],
  );
  await q('ANALYZE');
});

afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

/**
 * A pool that runs each statement under EXPLAIN ANALYZE, keeps the plan, then runs it for
 * real and answers its rows: for code that sends a few statements and reads their answers.
 */
function explainingPool(): { pool: Pool; plans: PlanNode[] } {
  const plans: PlanNode[] = [];
  const pool = {
    query: async (sql: string, params: unknown[] = []) => {
      plans.push(await explainAnalyze(db.pool, sql, params));
      return db.pool.query(sql, params);
    },
  } as unknown as Pool;
  return { pool, plans };
}

const TABLES = ['events', 'deliveries', 'delivery_attempts', 'ingest_rejections', 'audit_logs'];

/** Rows read per table over all the plans. */
function readsOf(plans: PlanNode[]): PlanReads {
  const all = plans.map((p) => planReads(p, TABLES));
  const reads: Record<string, number> = {};
  for (const r of all) for (const [t, n] of Object.entries(r.reads)) reads[t] = (reads[t] ?? 0) + n;
  return { rows: all.reduce((n, r) => n + r.rows, 0), seqScans: all.flatMap((r) => r.seqScans), reads };
}

/** The plan of what Prisma sent (its statements on these tables), run again under EXPLAIN ANALYZE. */
async function prismaReads(): Promise<PlanReads> {
  const plans: PlanNode[] = [];
  for (const s of sent.splice(0)) if (TABLES.some((t) => s.text.includes(`"${t}"`))) plans.push(await explainAnalyze(db.pool, s.text, s.values));
  return readsOf(plans);
}

const app = (pool: Pool = db.pool as unknown as Pool): AppContext => ({ prisma, pool, redis: undefined, config: { QUEUE_PREFIX: 'winplans' } }) as unknown as AppContext;

function expectWithin(what: string, r: PlanReads, tables: string[], max: number): void {
  for (const t of tables) {
    const read = r.reads[t] ?? 0;
    expect({ what, table: t, seqScans: r.seqScans, within: read <= max, read }).toEqual({ what, table: t, seqScans: [], within: true, read });
  }
}

test('the indexes of migration 20261204000000_list_indexes exist, and the dedup_key one is gone', async () => {
  const { rows } = await db.pool.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()`);
  const names = rows.map((r) => r.indexname);
  expect(names).toEqual(expect.arrayContaining([
    'events_ingester_id_id_idx', 'audit_logs_tenant_id_resource_id_created_at_idx', 'ingesters_cluster_id_idx', 'delivery_flows_destination_id_idx',
  ]));
  expect(names).not.toContain('events_ingester_id_dedup_key_idx');
  expect(names).not.toContain('events_tenant_id_status_id_idx');
  expect(names).not.toContain('events_tenant_id_correlation_id_idx');
});

test('/v1/overview counts a day of events, deliveries and rejections, reading about a day of each', async () => {
  const x = explainingPool();
  const body = await overview(app(x.pool), tenantId, 'free');
  // About 533 of the tenant's rows a day (4 in 5 of 667).
  expect((body['events_24h'] as { delivered: number }).delivered).toBeGreaterThan(400);
  expect(body['rejections_24h']).toBeGreaterThan(400);
  expectWithin('overview', readsOf(x.plans), ['events', 'deliveries', 'ingest_rejections'], WINDOW_READS);
});

test('/v1/sources reads the tenant\'s last day once, however many ingesters it has', async () => {
  const x = explainingPool();
  const body = await sources(app(x.pool), tenantId);
  expect(body['sources']).toEqual([
    { provider: 'generic', ingesters: 1, events_24h: expect.any(Number), last_event_at: expect.any(String) },
    { provider: 'github', ingesters: 10, events_24h: 0, last_event_at: null },
    { provider: 'stripe', ingesters: 1, events_24h: expect.any(Number), last_event_at: expect.any(String) },
  ]);
  expectWithin('sources', readsOf(x.plans), ['events'], WINDOW_READS);
});

test('target health reads a day of the tenant\'s attempts', async () => {
  const x = explainingPool();
  const body = await targetHealth(app(x.pool), tenantId, 'dst_busy');
  expect((body['window'] as { attempts: number }).attempts).toBeGreaterThan(400);
  expectWithin('target health', readsOf(x.plans), ['delivery_attempts', 'deliveries'], WINDOW_READS);
});

describe('since/until of the lists read the window (a page from its newest end), not the history after it', () => {
  const since = new Date(Date.now() - 30 * DAY).toISOString();
  const until = new Date(Date.now() - 29 * DAY).toISOString();
  beforeEach(() => {
    sent.length = 0;
  });

  test('events and traces', async () => {
    const page = await traces(app(), tenantId, { since, until });
    expect((page['traces'] as unknown[]).length).toBe(20);
    const r = await prismaReads();
    // A page of 21 after the hour of slack past `until`: about 40 rows.
    expectWithin('traces since/until', r, ['events'], 200);
  });

  test('an events filter with no match in the window reads the window, not the history', async () => {
    const page = await traces(app(), tenantId, { since, until, status: 'failed' });
    expect(page['traces']).toEqual([]);
    expectWithin('traces status=failed since/until', await prismaReads(), ['events'], WINDOW_READS);
  });

  test('deliveries', async () => {
    const page = await listDeliveries(app(), tenantId, { since, until });
    expect(page.items).toHaveLength(20);
    expectWithin('deliveries since/until', await prismaReads(), ['deliveries'], 200);
    const none = await listDeliveries(app(), tenantId, { since, until, destination_id: 'dst_other' });
    expect(none.items).toEqual([]);
    expectWithin('deliveries of another destination since/until', await prismaReads(), ['deliveries'], WINDOW_READS);
  });

  test('delivery attempts', async () => {
    const page = (await listTenantAttempts(app(), tenantId, { since, until })) as { delivery_attempts: unknown[] };
    expect(page.delivery_attempts).toHaveLength(20);
    expectWithin('attempts since/until', await prismaReads(), ['delivery_attempts'], 200);
  });
});

test('a trace by correlation id with since/until reads that window, not the tenant\'s events', async () => {
  sent.length = 0;
  const { rows } = await db.pool.query<{ correlation_id: string; received_at: Date }>(`SELECT correlation_id, received_at FROM events WHERE tenant_id = $1 ORDER BY id LIMIT 1 OFFSET 100`, [tenantId]);
  const at = rows[0]!.received_at.getTime();
  const window = { since: new Date(at - 60_000).toISOString(), until: new Date(at + 60_000).toISOString() };
  const found = await traces(app(), tenantId, { correlation_id: rows[0]!.correlation_id, ...window });
  expect(found['traces']).toHaveLength(1);
  expectWithin('trace by correlation id', await prismaReads(), ['events'], WINDOW_READS);
  expect((await traces(app(), tenantId, { correlation_id: 'no-such-trace', ...window }))['traces']).toEqual([]);
  expectWithin('unknown correlation id', await prismaReads(), ['events'], WINDOW_READS);
});

test('a resource\'s audit entries (MCP logs) are read through their index', async () => {
  for (const id of [`dst_${'7'.padStart(26, '0')}`, `cls_${'0'.repeat(26)}`]) {
    const x = explainingPool();
    const deps = { pool: x.pool } as unknown as McpDeps;
    const answer = await logsFor(deps, tenantId, id, { limit: 20 }).then(
      (r) => r.entries.length,
      () => 'not found',
    );
    expect(answer).toBe(id.startsWith('dst_') ? 20 : 'not found');
    // 200 entries each for the tenant's 200 resources: a page, or nothing, not the 40,000.
    expectWithin(`logs of ${id}`, readsOf(x.plans), ['audit_logs'], 100);
  }
});
