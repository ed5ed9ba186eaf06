// Two routers whose flow caches differ (a config change announced to one, not yet to the
// other) route the same event: the second routing statement must leave an event the first
// one already moved out of `validated` alone, deliveries included. Before, it inserted its
// deliveries anyway and the event kept the first one's no_matching_flow.
import { Client } from 'pg';
import { parseDatabaseUrl, type Pool } from '@hookline/db';
import { waitFor, type TestDatabase } from '@hookline/testing';
import { FlowCache } from '../services/router/src/flow-cache';
import { routeEvents, type RouteDeps } from '../services/router/src/route-events';
import { deliveriesOf, eventState, insertDestination, insertEvent, insertFlow, insertIngester, openRouterTest, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let tenantId: string;

beforeAll(async () => {
  t = await openRouterTest('rrace');
  ({ db, tenantId } = t);
});

afterAll(() => t.close());

const depsWith = (flows: FlowCache, pool: Pool = db.pool): RouteDeps => ({ pool, producer: t.producer, flows, logger: t.logger });

/** The real pool, whose routing statement (router_route…) waits until `release` is called. */
function heldBackPool(): { pool: Pool; release: () => void; reached: Promise<void> } {
  let release!: () => void;
  let arrived!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (arrived = r));
  const pool = new Proxy(db.pool, {
    get: (target, prop, receiver) =>
      prop === 'query'
        ? async (q: string | { name?: string }, values?: unknown[]) => {
            if (typeof q === 'object' && q.name?.startsWith('router_route')) {
              arrived();
              await gate;
            }
            return target.query(q as string, values);
          }
        : Reflect.get(target, prop, receiver),
  });
  return { pool, release, reached };
}

/** An ingester whose router A cached "no flows" just before a flow (to a `state` destination) was added; B sees the flow. */
async function staleAndFresh(state: 'ACTIVE' | 'DISABLED'): Promise<{ ingesterId: string; flowId: string; cacheA: FlowCache; cacheB: FlowCache }> {
  const ingesterId = await insertIngester(db.pool, tenantId);
  const cacheA = new FlowCache(db.pool, 600_000);
  await cacheA.lookup(new Map([[ingesterId, tenantId]]));
  const flowId = await insertFlow(db.pool, { tenantId, ingesterId, destinationId: await insertDestination(db.pool, tenantId, state) });
  return { ingesterId, flowId, cacheA, cacheB: new FlowCache(db.pool, 600_000) };
}

async function openClient(): Promise<Client> {
  const c = new Client({ connectionString: parseDatabaseUrl(db.url).connectionString });
  await c.connect();
  await c.query(`SET search_path TO "${db.schema}"`);
  return c;
}

describe('router: an event routed by another router meanwhile', () => {
  it.each(['ACTIVE', 'DISABLED'] as const)(
    'gets no delivery from the router that loaded it before the other one committed (destination %s)',
    async (state) => {
      const { ingesterId, cacheA, cacheB } = await staleAndFresh(state);
      const e = await insertEvent(db.pool, { tenantId, ingesterId });
      // B has loaded the event (validated) and evaluated its flows; its statement waits.
      const slow = heldBackPool();
      const b = routeEvents(depsWith(cacheB, slow.pool), { eventIds: [e] });
      await slow.reached;
      // A, with its stale cache, routes it nowhere and commits.
      const a = await routeEvents(depsWith(cacheA), { eventIds: [e] });
      expect(a).toMatchObject({ routed: 1, unmatched: 1, deliveryIds: [] });
      slow.release();
      const bo = await b;

      expect(bo).toMatchObject({ routed: 0, deliveryIds: [], held: 0 });
      expect(await deliveriesOf(db.pool, [e])).toEqual([]);
      expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'no_matching_flow' });
    },
  );

  it('waits for a routing statement still in progress on the event, then leaves the event alone', async () => {
    const { ingesterId, cacheB } = await staleAndFresh('ACTIVE');
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    // Router A's statement has moved the event but not committed yet.
    const a = await openClient();
    try {
      await a.query('BEGIN');
      await a.query(`UPDATE events SET status = 'filtered', filtered_at = now(), status_reason = 'no_matching_flow' WHERE id = $1`, [e]);
      const b = routeEvents(depsWith(cacheB), { eventIds: [e] });
      // B's statement is blocked by A's row lock.
      await waitFor(async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO deliveries%' AND datname = current_database()`,
        );
        return rows[0]!.n > 0;
      }, { timeoutMs: 10_000, intervalMs: 20, what: "B's statement waiting for A's row lock" });
      await a.query('COMMIT');
      expect(await b).toMatchObject({ routed: 0, deliveryIds: [] });
    } finally {
      await a.end();
    }
    expect(await deliveriesOf(db.pool, [e])).toEqual([]);
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'no_matching_flow' });
  });

  it('routes the batch\'s other events, which no other router touched', async () => {
    const { ingesterId, flowId, cacheB } = await staleAndFresh('ACTIVE');
    const taken = await insertEvent(db.pool, { tenantId, ingesterId });
    const fresh = await insertEvent(db.pool, { tenantId, ingesterId });
    const slow = heldBackPool();
    const b = routeEvents(depsWith(cacheB, slow.pool), { eventIds: [taken, fresh] });
    await slow.reached;
    // Another router routes one of the two meanwhile (nowhere).
    await db.pool.query(`UPDATE events SET status = 'filtered', filtered_at = now(), status_reason = 'no_matching_flow' WHERE id = $1`, [taken]);
    slow.release();
    expect(await b).toMatchObject({ routed: 1 });
    expect((await deliveriesOf(db.pool, [taken, fresh])).map((r) => [r.event_id, r.flow_id])).toEqual([[fresh, flowId]]);
    expect(await eventState(db.pool, fresh)).toMatchObject({ status: 'filtered', status_reason: null });
    expect(await eventState(db.pool, taken)).toMatchObject({ status: 'filtered', status_reason: 'no_matching_flow' });
  });
});
