import { Client } from 'pg';
import { parseDatabaseUrl } from '@hookline/db';
import { createRedis, onConfigChange, publishConfigChange, type JobData } from '@hookline/queues';
import { seedTenant, waitFor, type TestDatabase } from '@hookline/testing';
import { FlowCache } from '../services/router/src/flow-cache';
import { routeEvents, type RouteDeps } from '../services/router/src/route-events';
import { deliveriesOf, eventState, insertDestination, insertEvent, insertFlow, insertIngester, openRouterTest, routeDepsOf, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let deps: RouteDeps;
let tenantId: string;

beforeAll(async () => {
  t = await openRouterTest('router');
  ({ db, tenantId } = t);
  deps = routeDepsOf(t);
});

afterAll(() => t.close());

beforeEach(() => t.producer.queue('deliver').obliterate({ force: true }));

const deliverJobs = (): Promise<Array<JobData['deliver']>> => t.waitingJobs('deliver');

/** A connection of its own on the test schema (to hold a transaction open). */
async function openClient(): Promise<Client> {
  const c = new Client({ connectionString: parseDatabaseUrl(db.url).connectionString });
  await c.connect();
  await c.query(`SET search_path TO "${db.schema}"`);
  return c;
}

/** An ingester with one ACTIVE flow per filter given, each to its own ACTIVE destination. */
async function ingesterWithFlows(...filters: unknown[]): Promise<{ ingesterId: string; flowIds: string[]; destinationIds: string[] }> {
  const ingesterId = await insertIngester(db.pool, tenantId, 'stripe');
  const flowIds: string[] = [];
  const destinationIds: string[] = [];
  for (const filter of filters) {
    const destinationId = await insertDestination(db.pool, tenantId);
    destinationIds.push(destinationId);
    flowIds.push(await insertFlow(db.pool, { tenantId, ingesterId, destinationId, filter }));
  }
  return { ingesterId, flowIds, destinationIds };
}

describe('routeEvents', () => {
  it('creates one pending delivery per matching flow, marks events filtered and enqueues one deliver job', async () => {
    const a = await ingesterWithFlows({}, {});
    const b = await ingesterWithFlows({});
    const e1 = await insertEvent(db.pool, { tenantId, ingesterId: a.ingesterId });
    const e2 = await insertEvent(db.pool, { tenantId, ingesterId: a.ingesterId });
    const e3 = await insertEvent(db.pool, { tenantId, ingesterId: b.ingesterId });

    const out = await routeEvents(deps, { eventIds: [e1, e2, e3], traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });

    expect(out).toMatchObject({ routed: 3, skipped: 0, unmatched: 0, enqueued: true });
    const rows = await deliveriesOf(db.pool, [e1, e2, e3]);
    expect(rows).toHaveLength(5);
    expect(rows.every((r) => r.status === 'pending' && r.tenant_id === tenantId && r.id.startsWith('dlv_'))).toBe(true);
    expect(rows.filter((r) => r.event_id === e1).map((r) => r.flow_id).sort()).toEqual([...a.flowIds].sort());
    expect(rows.filter((r) => r.event_id === e3).map((r) => [r.flow_id, r.destination_id])).toEqual([[b.flowIds[0], b.destinationIds[0]]]);
    for (const id of [e1, e2, e3]) {
      const s = await eventState(db.pool, id);
      expect(s.status).toBe('filtered');
      expect(s.status_reason).toBeNull();
      expect(s.filtered_at).toBeInstanceOf(Date);
    }
    const jobs = await deliverJobs();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.v).toBe(1);
    expect([...jobs[0]!.deliveryIds].sort()).toEqual(rows.map((r) => r.id).sort());
    expect(jobs[0]!.traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
  });

  it('marks an event of an ingester without active flows filtered with no_matching_flow and creates nothing', async () => {
    const { ingesterId } = await ingesterWithFlows();
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    const out = await routeEvents(deps, { eventIds: [e] });
    expect(out).toMatchObject({ routed: 1, unmatched: 1, deliveryIds: [] });
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'no_matching_flow' });
    expect(await deliveriesOf(db.pool, [e])).toEqual([]);
    expect(await deliverJobs()).toEqual([]);
  });

  it('marks an event every filter rejected with filter_rejected', async () => {
    const { ingesterId } = await ingesterWithFlows({ event_types: ['charge.*'] }, { match: { 'body.data.amount': { $gt: 1000 } } });
    const e = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid' });
    await routeEvents(deps, { eventIds: [e] });
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'filter_rejected' });
    expect(await deliveriesOf(db.pool, [e])).toEqual([]);
  });

  it('routes ACTIVE flows to ACTIVE and DISABLED destinations of the same tenant; deliveries to a DISABLED one are held (no job)', async () => {
    const ingesterId = await insertIngester(db.pool, tenantId);
    const active = await insertDestination(db.pool, tenantId);
    const other = await seedTenant(db.pool);
    const disabled = await insertDestination(db.pool, tenantId, 'DISABLED');
    const flows = {
      active: await insertFlow(db.pool, { tenantId, ingesterId, destinationId: active }),
      disabledFlow: await insertFlow(db.pool, { tenantId, ingesterId, destinationId: active, state: 'DISABLED' }),
      draftFlow: await insertFlow(db.pool, { tenantId, ingesterId, destinationId: active, state: 'DRAFT' }),
      disabledDest: await insertFlow(db.pool, { tenantId, ingesterId, destinationId: disabled }),
      deletedDest: await insertFlow(db.pool, { tenantId, ingesterId, destinationId: await insertDestination(db.pool, tenantId, 'DELETED') }),
      foreignDest: await insertFlow(db.pool, { tenantId, ingesterId, destinationId: await insertDestination(db.pool, other.tenantId) }),
    };
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    const out = await routeEvents(deps, { eventIds: [e] });
    const rows = await deliveriesOf(db.pool, [e]);
    expect(rows.map((r) => r.flow_id).sort()).toEqual([flows.active, flows.disabledDest].sort());
    expect(rows.every((r) => r.status === 'pending')).toBe(true);
    expect(out).toMatchObject({ routed: 1, unmatched: 0, held: 1 });
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: null });
    // Only the ACTIVE destination's delivery is handed to the deliverer.
    const held = rows.find((r) => r.flow_id === flows.disabledDest)!.id;
    expect((await deliverJobs()).flatMap((j) => j.deliveryIds)).toEqual([rows.find((r) => r.flow_id === flows.active)!.id]);
    expect((await deliverJobs()).flatMap((j) => j.deliveryIds)).not.toContain(held);
    // Stored held since now (the held expiry counts from it); the ACTIVE one's is not held.
    const { rows: stamps } = await db.pool.query<{ id: string; held: boolean; held_now: boolean | null }>(
      `SELECT id, held, held_since > now() - interval '1 minute' AS held_now FROM deliveries WHERE event_id = $1`,
      [e],
    );
    expect(Object.fromEntries(stamps.map((r) => [r.id, { held: r.held, held_now: r.held_now }]))).toEqual({
      [held]: { held: true, held_now: true },
      [rows.find((r) => r.flow_id === flows.active)!.id]: { held: false, held_now: null },
    });
  });

  it('marks an event whose ingester has only DISABLED or DRAFT flows with flow_not_active and creates nothing', async () => {
    const ingesterId = await insertIngester(db.pool, tenantId);
    const destinationId = await insertDestination(db.pool, tenantId);
    await insertFlow(db.pool, { tenantId, ingesterId, destinationId, state: 'DISABLED' });
    await insertFlow(db.pool, { tenantId, ingesterId, destinationId, state: 'DRAFT' });
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    const out = await routeEvents(deps, { eventIds: [e] });
    expect(out).toMatchObject({ routed: 1, unmatched: 1, deliveryIds: [] });
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'flow_not_active' });
    expect(await deliveriesOf(db.pool, [e])).toEqual([]);
    expect(await deliverJobs()).toEqual([]);
    // A switched-off flow to a DELETED destination is no route at all.
    const gone = await insertIngester(db.pool, tenantId);
    await insertFlow(db.pool, { tenantId, ingesterId: gone, destinationId: await insertDestination(db.pool, tenantId, 'DELETED'), state: 'DISABLED' });
    const g = await insertEvent(db.pool, { tenantId, ingesterId: gone });
    await routeEvents(deps, { eventIds: [g] });
    expect((await eventState(db.pool, g)).status_reason).toBe('no_matching_flow');
  });

  it('a DISABLED destination deleted while a batch is routed gets no delivery: the route waits for the delete and sees it', async () => {
    const ingesterId = await insertIngester(db.pool, tenantId);
    const destinationId = await insertDestination(db.pool, tenantId, 'DISABLED');
    await insertFlow(db.pool, { tenantId, ingesterId, destinationId });
    // A cache that still says DISABLED after the delete (its announcement not yet seen).
    const cached: RouteDeps = { ...deps, flows: new FlowCache(db.pool, 600_000) };
    const first = await insertEvent(db.pool, { tenantId, ingesterId });
    expect(await routeEvents(cached, { eventIds: [first] })).toMatchObject({ held: 1 });
    expect(await deliveriesOf(db.pool, [first])).toHaveLength(1);

    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    const deleter = await openClient();
    try {
      await deleter.query('BEGIN');
      await deleter.query(`UPDATE destinations SET state = 'DELETED' WHERE id = $1`, [destinationId]);
      let settled = false;
      const routing = routeEvents(cached, { eventIds: [e] }).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      await deleter.query('COMMIT');
      expect(await routing).toMatchObject({ routed: 1, deliveryIds: [], held: 0 });
    } finally {
      await deleter.end();
    }
    expect(await deliveriesOf(db.pool, [e])).toEqual([]);
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'no_matching_flow' });
  });

  it('a DISABLED destination enabled before its announcement arrived: the new delivery is enqueued at once', async () => {
    const ingesterId = await insertIngester(db.pool, tenantId);
    const destinationId = await insertDestination(db.pool, tenantId, 'DISABLED');
    await insertFlow(db.pool, { tenantId, ingesterId, destinationId });
    const cached: RouteDeps = { ...deps, flows: new FlowCache(db.pool, 600_000) };
    await cached.flows.lookup(new Map([[ingesterId, tenantId]]));
    await db.pool.query(`UPDATE destinations SET state = 'ACTIVE' WHERE id = $1`, [destinationId]);
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    const out = await routeEvents(cached, { eventIds: [e] });
    expect(out).toMatchObject({ held: 0 });
    expect(out.deliveryIds).toHaveLength(1);
    expect((await deliverJobs()).flatMap((j) => j.deliveryIds)).toEqual(out.deliveryIds);
  });

  it('creates nothing twice when a job is repeated, even concurrently', async () => {
    const { ingesterId } = await ingesterWithFlows({}, {}, {});
    const events = [await insertEvent(db.pool, { tenantId, ingesterId }), await insertEvent(db.pool, { tenantId, ingesterId })];
    const [first, second] = await Promise.all([routeEvents(deps, { eventIds: events }), routeEvents(deps, { eventIds: events })]);
    expect(first!.deliveryIds.length + second!.deliveryIds.length).toBe(6);
    expect(first!.routed + second!.routed).toBe(2);

    const again = await routeEvents(deps, { eventIds: [...events, events[0]!] });
    expect(again).toMatchObject({ routed: 0, skipped: 2, deliveryIds: [] });
    expect(await deliveriesOf(db.pool, events)).toHaveLength(6);
    const jobs = await deliverJobs();
    expect(jobs.flatMap((j) => j.deliveryIds).sort()).toEqual((await deliveriesOf(db.pool, events)).map((r) => r.id).sort());
  });

  it('skips events that are not validated and unknown ids', async () => {
    const { ingesterId } = await ingesterWithFlows({});
    const received = await insertEvent(db.pool, { tenantId, ingesterId, status: 'received' });
    const delivered = await insertEvent(db.pool, { tenantId, ingesterId, status: 'delivered' });
    const out = await routeEvents(deps, { eventIds: [received, delivered, 'evt_unknown'] });
    expect(out).toMatchObject({ routed: 0, skipped: 3, deliveryIds: [] });
    expect((await eventState(db.pool, received)).status).toBe('received');
    expect(await deliverJobs()).toEqual([]);
  });

  it('fans out to every matching flow, one delivery per flow, also for flows sharing a destination', async () => {
    const ingesterId = await insertIngester(db.pool, tenantId);
    const d1 = await insertDestination(db.pool, tenantId);
    const d2 = await insertDestination(db.pool, tenantId);
    const d3 = await insertDestination(db.pool, tenantId);
    const f = [
      await insertFlow(db.pool, { tenantId, ingesterId, destinationId: d1 }),
      await insertFlow(db.pool, { tenantId, ingesterId, destinationId: d2, filter: { event_types: ['invoice.*'] } }),
      await insertFlow(db.pool, { tenantId, ingesterId, destinationId: d3, filter: { match: { type: 'invoice.paid' } } }),
      await insertFlow(db.pool, { tenantId, ingesterId, destinationId: d3, filter: { jsonpath: '$.body.data' } }),
      await insertFlow(db.pool, { tenantId, ingesterId, destinationId: d2, filter: { event_types: ['charge.*'] } }),
    ];
    const e = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid' });
    const out = await routeEvents(deps, { eventIds: [e] });
    const rows = await deliveriesOf(db.pool, [e]);
    expect(rows.map((r) => r.flow_id).sort()).toEqual(f.slice(0, 4).sort());
    expect(rows.map((r) => r.destination_id).sort()).toEqual([d1, d2, d3, d3].sort());
    expect([...out.deliveryIds].sort()).toEqual(rows.map((r) => r.id).sort());
  });
});

describe('routeEvents filters', () => {
  const body = JSON.stringify({ id: 'evt_1', data: { object: { amount: 2500, currency: 'usd', customer: 'cus_9', lines: [{ sku: 'pro' }, { sku: 'addon' }] } } });
  const cases: Array<[string, unknown, boolean]> = [
    ['event type exact', { event_types: ['invoice.paid'] }, true],
    ['event type wildcard', { event_types: ['invoice.*'] }, true],
    ['event type other', { event_types: ['customer.*'] }, false],
    ['match $gte', { match: { 'body.data.object.amount': { $gte: 2000 } } }, true],
    ['match $lt', { match: { 'body.data.object.amount': { $lt: 2000 } } }, false],
    ['match $in', { match: { 'body.data.object.currency': { $in: ['eur', 'usd'] } } }, true],
    ['match array element', { match: { 'body.data.object.lines.sku': 'addon' } }, true],
    ['match nested', { match: { body: { data: { object: { customer: { $startsWith: 'cus_' } } } } } }, true],
    ['match missing field', { match: { 'body.data.object.refunded': true } }, false],
    ['match $exists false', { match: { 'body.data.object.refunded': { $exists: false } } }, true],
    ['match $or', { match: { $or: [{ type: 'x' }, { 'source.provider': 'stripe' }] } }, true],
    ['match $not', { match: { $not: { 'headers.x-test': 'yes' } } }, false],
    ['match header and query', { match: { 'headers.x-test': 'yes', 'query.env': 'prod' } }, true],
    ['match header named in any case', { match: { 'headers.X-Test': 'yes' } }, true],
    ['jsonpath header named in any case', { jsonpath: "$.headers['X-Test']" }, true],
    ['jsonpath filter', { jsonpath: '$.body.data.object[?(@.amount > 1000)]' }, true],
    ['jsonpath filter rejects', { jsonpath: "$.body.data.object.lines[?(@.sku == 'enterprise')]" }, false],
    ['jsonpath header', { jsonpath: "$.headers['x-test']" }, true],
    ['all parts together', { event_types: ['invoice.*'], jsonpath: ['$.body.id'], match: { 'body.data.object.amount': { $gt: 0 } } }, true],
  ];

  it.each(cases)('%s', async (_name, filter, expected) => {
    const { ingesterId } = await ingesterWithFlows(filter);
    const e = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid', body, headers: { 'X-Test': 'yes', 'Content-Type': 'application/json' }, query: 'env=prod' });
    const out = await routeEvents(deps, { eventIds: [e] });
    expect(out.deliveryIds).toHaveLength(expected ? 1 : 0);
    expect((await eventState(db.pool, e)).status_reason).toBe(expected ? null : 'filter_rejected');
  });

  it('reads stored requests only for events a filter looks at, and filters those by their body in the same batch', async () => {
    const all = await ingesterWithFlows({});
    const filtered = await ingesterWithFlows({ match: { 'body.kind': 'wanted' } });
    const plain = await insertEvent(db.pool, { tenantId, ingesterId: all.ingesterId });
    const wanted = await insertEvent(db.pool, { tenantId, ingesterId: filtered.ingesterId, body: JSON.stringify({ kind: 'wanted' }) });
    const unwanted = await insertEvent(db.pool, { tenantId, ingesterId: filtered.ingesterId, body: JSON.stringify({ kind: 'other' }) });
    // The real pool, watched: which event ids the payload read asked for.
    const asked: string[][] = [];
    const pool = new Proxy(db.pool, {
      get: (target, prop, receiver) =>
        prop === 'query'
          ? (q: string | { text: string }, values?: unknown[]) => {
              if (typeof q === 'string' && q.includes('FROM event_payloads')) asked.push([...(values![0] as string[])].sort());
              return target.query(q as string, values);
            }
          : Reflect.get(target, prop, receiver),
    });
    const out = await routeEvents({ ...deps, pool }, { eventIds: [plain, wanted, unwanted] });
    expect(asked).toEqual([[wanted, unwanted].sort()]);
    expect(out).toMatchObject({ routed: 3, unmatched: 1 });
    expect((await deliveriesOf(db.pool, [plain, wanted, unwanted])).map((r) => r.event_id).sort()).toEqual([plain, wanted].sort());
    expect((await eventState(db.pool, unwanted)).status_reason).toBe('filter_rejected');
  });

  it('filters form-encoded bodies (Twilio) as fields', async () => {
    const { ingesterId } = await ingesterWithFlows({ match: { 'body.SmsStatus': 'delivered', 'body.From': { $startsWith: '+1' } } });
    const e = await insertEvent(db.pool, { tenantId, ingesterId, contentType: 'application/x-www-form-urlencoded', body: 'SmsStatus=delivered&From=%2B15551234567' });
    expect((await routeEvents(deps, { eventIds: [e] })).deliveryIds).toHaveLength(1);
  });

  it('treats a body that is not JSON as null', async () => {
    const { ingesterId } = await ingesterWithFlows({ match: { body: { $eq: null } } }, { jsonpath: '$.body.a' });
    const e = await insertEvent(db.pool, { tenantId, ingesterId, contentType: 'text/plain', body: 'a=1 not json' });
    expect((await routeEvents(deps, { eventIds: [e] })).deliveryIds).toHaveLength(1);
  });

  it('an invalid stored filter matches nothing (fail closed) without failing the batch', async () => {
    const { ingesterId } = await ingesterWithFlows({ match: { type: { $regex: '.*' } } }, {});
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    const out = await routeEvents(deps, { eventIds: [e] });
    expect(out.deliveryIds).toHaveLength(1);
  });
});

// SPEC.md (Endpoint (ingester)): `filters`, event filtering conditions (event type, headers).
// The ingester's filter, in a flow filter's format, gates all of its flows: an event it
// rejects is routed to none of them (status_reason ingester_filter_rejected); one it accepts
// goes on to each flow's own filter.
describe('routeEvents ingester filters', () => {
  const setIngesterFilters = (ingesterId: string, filters: unknown): Promise<unknown> =>
    db.pool.query(`UPDATE ingesters SET filters = $2::jsonb WHERE id = $1`, [ingesterId, filters === null ? null : JSON.stringify(filters)]);
  const headers = (env: string): Record<string, string> => ({ 'Content-Type': 'application/json', 'X-Env': env });

  it('routes an event the ingester filter rejects to none of its flows, marked ingester_filter_rejected', async () => {
    const { ingesterId } = await ingesterWithFlows({}, { event_types: ['invoice.*'] });
    await setIngesterFilters(ingesterId, { event_types: ['charge.*'] });
    const e = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid' });
    const out = await routeEvents(deps, { eventIds: [e] });
    expect(out).toMatchObject({ routed: 1, unmatched: 1, deliveryIds: [] });
    expect(await eventState(db.pool, e)).toMatchObject({ status: 'filtered', status_reason: 'ingester_filter_rejected' });
    expect(await deliveriesOf(db.pool, [e])).toEqual([]);
    expect(await deliverJobs()).toEqual([]);
  });

  it("sends an event the ingester filter accepts on to each flow's own filter (AND), per ingester in one batch", async () => {
    const gated = await ingesterWithFlows({}, { event_types: ['invoice.*'] }, { event_types: ['charge.*'] });
    await setIngesterFilters(gated.ingesterId, { event_types: ['invoice.*', 'charge.*'], match: { 'headers.x-env': 'prod' } });
    const onlyCharges = await ingesterWithFlows({ event_types: ['charge.*'] });
    await setIngesterFilters(onlyCharges.ingesterId, { match: { 'headers.X-Env': 'prod' } });
    const open = await ingesterWithFlows({});
    await setIngesterFilters(open.ingesterId, {});

    const prod = await insertEvent(db.pool, { tenantId, ingesterId: gated.ingesterId, type: 'invoice.paid', headers: headers('prod') });
    const staging = await insertEvent(db.pool, { tenantId, ingesterId: gated.ingesterId, type: 'invoice.paid', headers: headers('staging') });
    const otherType = await insertEvent(db.pool, { tenantId, ingesterId: gated.ingesterId, type: 'customer.created', headers: headers('prod') });
    const flowsReject = await insertEvent(db.pool, { tenantId, ingesterId: onlyCharges.ingesterId, type: 'invoice.paid', headers: headers('prod') });
    const anything = await insertEvent(db.pool, { tenantId, ingesterId: open.ingesterId, type: 'customer.created', headers: headers('staging') });

    const out = await routeEvents(deps, { eventIds: [prod, staging, otherType, flowsReject, anything] });
    expect(out).toMatchObject({ routed: 5, unmatched: 3 });
    const rows = await deliveriesOf(db.pool, [prod, staging, otherType, flowsReject, anything]);
    // The ingester filter passed: the flows' own filters decide (two of three match).
    expect(rows.filter((r) => r.event_id === prod).map((r) => r.flow_id).sort()).toEqual(gated.flowIds.slice(0, 2).sort());
    expect(rows.filter((r) => r.event_id === anything).map((r) => r.flow_id)).toEqual(open.flowIds);
    expect(rows.map((r) => r.event_id).sort()).toEqual([prod, prod, anything].sort());
    expect(await eventState(db.pool, prod)).toMatchObject({ status: 'filtered', status_reason: null });
    expect(await eventState(db.pool, staging)).toMatchObject({ status: 'filtered', status_reason: 'ingester_filter_rejected' });
    expect(await eventState(db.pool, otherType)).toMatchObject({ status: 'filtered', status_reason: 'ingester_filter_rejected' });
    // Passed the ingester's filter, then every flow's filter rejected it.
    expect(await eventState(db.pool, flowsReject)).toMatchObject({ status: 'filtered', status_reason: 'filter_rejected' });
    expect(await eventState(db.pool, anything)).toMatchObject({ status: 'filtered', status_reason: null });
  });

  it('reads the stored request of an event whose ingester has a filter even when its flows have none', async () => {
    const { ingesterId, flowIds } = await ingesterWithFlows({});
    await setIngesterFilters(ingesterId, { match: { 'body.kind': 'wanted' } });
    const wanted = await insertEvent(db.pool, { tenantId, ingesterId, body: JSON.stringify({ kind: 'wanted' }) });
    const unwanted = await insertEvent(db.pool, { tenantId, ingesterId, body: JSON.stringify({ kind: 'other' }) });
    await routeEvents(deps, { eventIds: [wanted, unwanted] });
    expect((await deliveriesOf(db.pool, [wanted, unwanted])).map((r) => [r.event_id, r.flow_id])).toEqual([[wanted, flowIds[0]]]);
    expect((await eventState(db.pool, unwanted)).status_reason).toBe('ingester_filter_rejected');
  });

  it('keeps no_matching_flow and flow_not_active for an ingester with a filter but no flow that routes', async () => {
    const bare = await insertIngester(db.pool, tenantId);
    await setIngesterFilters(bare, { event_types: ['charge.*'] });
    const switchedOff = await insertIngester(db.pool, tenantId);
    await setIngesterFilters(switchedOff, { event_types: ['charge.*'] });
    await insertFlow(db.pool, { tenantId, ingesterId: switchedOff, destinationId: await insertDestination(db.pool, tenantId), state: 'DISABLED' });
    const a = await insertEvent(db.pool, { tenantId, ingesterId: bare, type: 'invoice.paid' });
    const b = await insertEvent(db.pool, { tenantId, ingesterId: switchedOff, type: 'invoice.paid' });
    await routeEvents(deps, { eventIds: [a, b] });
    expect((await eventState(db.pool, a)).status_reason).toBe('no_matching_flow');
    expect((await eventState(db.pool, b)).status_reason).toBe('flow_not_active');
  });

  it("a stored ingester filter that is invalid matches nothing (fail closed), like a flow's", async () => {
    const { ingesterId } = await ingesterWithFlows({});
    await setIngesterFilters(ingesterId, { match: { type: { $regex: '.*' } } });
    const e = await insertEvent(db.pool, { tenantId, ingesterId });
    expect(await routeEvents(deps, { eventIds: [e] })).toMatchObject({ routed: 1, deliveryIds: [] });
    expect((await eventState(db.pool, e)).status_reason).toBe('ingester_filter_rejected');
  });

  it("a change of the ingester's filter takes effect once its config-change announcement arrives", async () => {
    const { ingesterId, flowIds } = await ingesterWithFlows({});
    await setIngesterFilters(ingesterId, { event_types: ['charge.*'] });
    const cache = new FlowCache(db.pool, 600_000);
    const cached: RouteDeps = { ...deps, flows: cache };
    const sub = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
    try {
      let arrived!: () => void;
      const announced = new Promise<void>((r) => (arrived = r));
      await onConfigChange(sub, t.prefix, (c) => {
        cache.invalidate(c);
        if (c.id === ingesterId) arrived();
      });
      const before = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid' });
      await routeEvents(cached, { eventIds: [before] });
      expect((await eventState(db.pool, before)).status_reason).toBe('ingester_filter_rejected');

      // Changed in the database: the cached filter stays in force until the announcement.
      await setIngesterFilters(ingesterId, { event_types: ['invoice.*'] });
      const stale = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid' });
      await routeEvents(cached, { eventIds: [stale] });
      expect((await eventState(db.pool, stale)).status_reason).toBe('ingester_filter_rejected');

      await publishConfigChange(t.redis, t.prefix, { kind: 'ingester', id: ingesterId, tenantId });
      await announced;
      const after = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid' });
      const out = await routeEvents(cached, { eventIds: [after] });
      expect((await deliveriesOf(db.pool, [after])).map((r) => r.flow_id)).toEqual(flowIds);
      expect(out.deliveryIds).toHaveLength(1);
      expect(await eventState(db.pool, after)).toMatchObject({ status: 'filtered', status_reason: null });

      // Removed (NULL): every event goes on to the flows.
      await setIngesterFilters(ingesterId, null);
      await publishConfigChange(t.redis, t.prefix, { kind: 'ingester', id: ingesterId, tenantId });
      await waitFor(async () => {
        const e = await insertEvent(db.pool, { tenantId, ingesterId, type: 'customer.created' });
        return (await routeEvents(cached, { eventIds: [e] })).deliveryIds.length === 1;
      }, { what: 'the removed filter to be seen' });
    } finally {
      sub.disconnect();
    }
  });
});
