// The pipeline's cached plans are index plans (migration 20261122000000_outcomes_cached_plans,
// INDEX_PLAN_SETTINGS in @hookline/db). The hottest statements are named prepared statements
// and record_delivery_outcomes lets PL/pgSQL keep its plans: PostgreSQL plans each once per
// connection, from the statistics of that moment. Here the tables are nearly empty, the
// moment such a plan goes wrong: without the settings the generic plans scan tables and
// hash-join them (checked, so that this test can tell), with them they look rows up by key.
import { createPool, type Pool } from '@hookline/db';
import { recordOutcomes, type Outcome } from '@hookline/delivery';
import { claimDeliveries, CLAIM_SQL } from '../services/deliverer/src/claim-deliveries';
import { STORE } from '../services/ingest/src/write-batch';
import { LOAD_EVENTS } from '../services/router/src/load-events';
import { ROUTE } from '../services/router/src/route-events';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

const FUNCTION = `record_delivery_outcomes(text[], text[], text[], int[], int[], text[], text[], text[], text[], timestamptz[], int[], text[], int[], text[], text, text[])`;
const SCANS = new Set(['Seq Scan', 'Hash Join', 'Merge Join']);

let h: Harness;

beforeAll(async () => {
  h = await createHarness('cachedplans');
});

afterAll(async () => {
  await h?.close();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every scan or join of a plan that grows with a table: "Seq Scan on deliveries", "Hash Join". */
function scansOf(plan: PlanNode): string[] {
  const own = SCANS.has(plan['Node Type']) ? [`${plan['Node Type']}${plan['Relation Name'] ? ` on ${plan['Relation Name']}` : ''}`] : [];
  return [...own, ...(plan.Plans ?? []).flatMap(scansOf)];
}

/** The generic plan PostgreSQL caches for `sql` on a connection of `pool`. */
async function genericPlan(pool: Pool, sql: string, args: string): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query('SET plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE s AS ${sql}`);
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) EXECUTE s(${args})`);
    await client.query('DEALLOCATE s');
    return scansOf(rows[0]!['QUERY PLAN'][0]!.Plan);
  } finally {
    client.release(true);
  }
}

const STATEMENTS: Array<[string, string, string]> = [
  ['ingest_store', STORE, `${Array(13).fill("'{}'").join(', ')}, 60`],
  ['router_load_events', LOAD_EVENTS, `'{evt_x}'`],
  ['router_route', ROUTE, `${Array(7).fill("'{}'").join(', ')}`],
  ['deliverer_claim', CLAIM_SQL, `'{dlv_x}', 250, 60000, 'owner'`],
];

test('the named statements: index lookups on the pipeline connections, scans without their settings', async () => {
  const pipeline = createPool(h.db.url, 1, { indexPlans: true });
  const plain = createPool(h.db.url, 1);
  try {
    for (const [name, sql, args] of STATEMENTS) {
      expect({ name, scans: await genericPlan(pipeline, sql, args) }).toEqual({ name, scans: [] });
    }
    const without = await Promise.all(STATEMENTS.map(([, sql, args]) => genericPlan(plain, sql, args)));
    expect(without.flat().length).toBeGreaterThan(0);
  } finally {
    await Promise.all([pipeline.end(), plain.end()]);
  }
});

/** The relations and indexes a plan's scans read: "events via events_pkey". */
function lookupsOf(plan: PlanNode & { 'Index Name'?: string }): string[] {
  const own = plan['Index Name'] ? [`${plan['Relation Name']} via ${plan['Index Name']}`] : [];
  return [...own, ...(plan.Plans ?? []).flatMap((p) => lookupsOf(p))];
}

test("the router's event load looks each event up by its key, not through the backlog's partial index", async () => {
  // With `id = ANY($1) AND status = 'validated'` the generic plan walked
  // events_received_at_validated_idx (every validated event) and filtered on the ids.
  const pipeline = createPool(h.db.url, 1, { indexPlans: true });
  const client = await pipeline.connect();
  try {
    await client.query('SET plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE s AS ${LOAD_EVENTS}`);
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) EXECUTE s('{evt_x}')`);
    expect(lookupsOf(rows[0]!['QUERY PLAN'][0]!.Plan).filter((l) => l.startsWith('events '))).toEqual(['events via events_pkey']);
  } finally {
    client.release(true);
    await pipeline.end();
  }
});

test('the pipeline connections run with the settings', async () => {
  const pipeline = createPool(h.db.url, 1, { indexPlans: true });
  try {
    const { rows } = await pipeline.query<{ s: string; j: string; m: string }>(
      `SELECT current_setting('enable_seqscan') AS s, current_setting('enable_hashjoin') AS j, current_setting('enable_mergejoin') AS m`,
    );
    expect(rows[0]).toEqual({ s: 'off', j: 'off', m: 'off' });
  } finally {
    await pipeline.end();
  }
});

/** The plans of the statements record_delivery_outcomes runs for one outcome, generic ones, as auto_explain logs them. */
async function functionPlans(): Promise<string[][]> {
  const dst = await h.destination('http://127.0.0.1:9/never-sent');
  const { deliveryId, eventId } = await h.delivery(dst.id);
  expect(await claimDeliveries(h.db.pool, { deliveryIds: [deliveryId], leaseOwner: 'o1', leaseMs: 60_000, slackMs: 250 })).toHaveLength(1);
  // A plain connection, as the function sees whatever settings its caller has.
  const pool = createPool(h.db.url, 1);
  const plans: PlanNode[] = [];
  pool.on('connect', (c) => c.on('notice', (n) => {
    const json = n.message?.slice(n.message.indexOf('{'));
    if (json && n.message?.includes('plan:')) plans.push((JSON.parse(json) as { Plan: PlanNode }).Plan);
  }));
  try {
    for (const s of ["LOAD 'auto_explain'", 'SET auto_explain.log_min_duration = 0', 'SET auto_explain.log_nested_statements = on', 'SET auto_explain.log_format = json', 'SET client_min_messages = log', 'SET plan_cache_mode = force_generic_plan']) {
      await pool.query(s);
    }
    const outcome: Outcome = {
      deliveryId, tenantId: h.tenantId, eventId, attemptNumber: 1, decision: { status: 'delivered' },
      result: { statusCode: 200, errorKind: null, error: null, responseBody: 'ok', responseHeaders: {}, startedAt: new Date(), durationMs: 3 },
    };
    await recordOutcomes(pool, 'o1', [outcome]);
    expect(await h.row(deliveryId)).toMatchObject({ status: 'delivered' });
  } finally {
    await pool.end();
  }
  // The function's three statements and the call itself.
  expect(plans.length).toBeGreaterThanOrEqual(4);
  return plans.map(scansOf);
}

test("record_delivery_outcomes' statements: index lookups as migrated, scans without its settings", async () => {
  expect((await functionPlans()).flat()).toEqual([]);
  await h.db.pool.query(`ALTER FUNCTION ${FUNCTION} RESET ALL`);
  expect((await functionPlans()).flat().length).toBeGreaterThan(0);
});
