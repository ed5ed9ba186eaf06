// Attacker-written bodies must not hold the router's event loop: the evaluation of a batch
// gives the loop a turn every few milliseconds (or events), and all the filters run on one
// event (the ingester's and every flow's) share one budget, EVENT_STEP_BUDGET; an event that
// spends it fails closed, as a filter over its own budget does.
import { LIMITS } from '../packages/filters/src';
import type { TestDatabase } from '@hookline/testing';
import { EVENT_STEP_BUDGET, routeEvents, type RouteDeps } from '../services/router/src/route-events';
import { deliveriesOf, eventState, ingesterWithFlows, insertEvent, openRouterTest, routeDepsOf, WatchedFlowCache, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let deps: RouteDeps;
let tenantId: string;

beforeAll(async () => {
  t = await openRouterTest('rbudget');
  ({ db, tenantId } = t);
  deps = routeDepsOf(t);
});

afterAll(() => t.close());

describe('router: filter evaluation and the event loop', () => {
  it('gives the event loop a turn while it evaluates a batch (a setImmediate callback runs between two filter runs)', async () => {
    const log: string[] = [];
    const { ingesterId } = await ingesterWithFlows(t, [{ match: { 'body.kind': 'wanted' } }]);
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push(await insertEvent(db.pool, { tenantId, ingesterId, body: JSON.stringify({ kind: i % 2 ? 'wanted' : 'other' }) }));
    // Everything else the process has to do: health checks, lock renewals, pub/sub.
    let running = true;
    const tick = (): void => {
      log.push('tick');
      if (running) setImmediate(tick);
    };
    setImmediate(tick);

    const out = await routeEvents({ ...deps, flows: new WatchedFlowCache(db.pool, log, () => 'eval') }, { eventIds: ids });
    running = false;

    expect(out).toMatchObject({ routed: 200, unmatched: 100 });
    const first = log.indexOf('eval');
    const last = log.lastIndexOf('eval');
    expect(log.filter((e) => e === 'eval')).toHaveLength(200);
    // Ticks between the first and the last evaluation: the batch did not hold the loop.
    expect(log.slice(first, last).filter((e) => e === 'tick').length).toBeGreaterThanOrEqual(2);
  });
});

describe('router: one evaluation budget per event, shared by all its filters', () => {
  // 35,000 items: each filter below visits ~70,000 values (within its own LIMITS.maxSteps),
  // two of them fit in the event's budget, three do not.
  const body = JSON.stringify({ items: Array.from({ length: 35_000 }, (_, i) => ({ v: i === 34_999 ? 5 : 1 })) });
  const heavy = { match: { 'body.items.v': 5 } };

  it('an event whose filters spend it matches none of them (filter_rejected); flows without a filter still get it', async () => {
    // At least one filter's own budget, less than three of the filters below.
    expect(EVENT_STEP_BUDGET).toBeGreaterThanOrEqual(LIMITS.maxSteps);
    expect(EVENT_STEP_BUDGET).toBeLessThan(3 * 70_000);
    const two = await ingesterWithFlows(t, [heavy, heavy]);
    const three = await ingesterWithFlows(t, [heavy, heavy, heavy]);
    const threeAndAll = await ingesterWithFlows(t, [heavy, heavy, heavy, {}]);
    const gatedTwo = await ingesterWithFlows(t, [heavy, heavy]);
    await db.pool.query(`UPDATE ingesters SET filters = $2::jsonb WHERE id = $1`, [gatedTwo.ingesterId, JSON.stringify(heavy)]);
    const e2 = await insertEvent(db.pool, { tenantId, ingesterId: two.ingesterId, body });
    const e3 = await insertEvent(db.pool, { tenantId, ingesterId: three.ingesterId, body });
    const e4 = await insertEvent(db.pool, { tenantId, ingesterId: threeAndAll.ingesterId, body });
    const eg = await insertEvent(db.pool, { tenantId, ingesterId: gatedTwo.ingesterId, body });

    const out = await routeEvents(deps, { eventIds: [e2, e3, e4, eg] });

    expect(out).toMatchObject({ routed: 4, unmatched: 2 });
    const rows = await deliveriesOf(db.pool, [e2, e3, e4, eg]);
    // Two filters' work fits: both match.
    expect(rows.filter((r) => r.event_id === e2).map((r) => r.flow_id).sort()).toEqual([...two.flowIds].sort());
    expect(await eventState(db.pool, e2)).toMatchObject({ status: 'filtered', status_reason: null });
    // Three do not: the event fails closed, as one filter over its own budget does.
    expect(rows.filter((r) => r.event_id === e3)).toEqual([]);
    expect(await eventState(db.pool, e3)).toMatchObject({ status: 'filtered', status_reason: 'filter_rejected' });
    expect(rows.filter((r) => r.event_id === e4).map((r) => r.flow_id)).toEqual([threeAndAll.flowIds[3]]);
    // The ingester's filter counts too: it and two flows are three filters' work.
    expect(rows.filter((r) => r.event_id === eg)).toEqual([]);
    expect(await eventState(db.pool, eg)).toMatchObject({ status: 'filtered', status_reason: 'filter_rejected' });
  });
});
