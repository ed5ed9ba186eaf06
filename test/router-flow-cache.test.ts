import { createRedis, onConfigChange, publishConfigChange, type Redis } from '@hookline/queues';
import { seedTenant, waitFor, type TestDatabase } from '@hookline/testing';
import { FlowCache } from '../services/router/src/flow-cache';
import { insertDestination, insertFlow, insertIngester, openRouterTest, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let sub: Redis;

beforeAll(async () => {
  t = await openRouterTest('rcache');
  db = t.db;
  sub = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
});

afterAll(async () => {
  sub.disconnect();
  await t.close();
});

async function setup(): Promise<{ tenantId: string; ingesterId: string; flowId: string; destinationId: string }> {
  const { tenantId } = await seedTenant(db.pool);
  const ingesterId = await insertIngester(db.pool, tenantId);
  const destinationId = await insertDestination(db.pool, tenantId);
  const flowId = await insertFlow(db.pool, { tenantId, ingesterId, destinationId, filter: { event_types: ['a.*'] } });
  return { tenantId, ingesterId, flowId, destinationId };
}

const ids = async (cache: FlowCache, ingesterId: string, tenantId: string): Promise<string[]> => ((await cache.get(new Map([[ingesterId, tenantId]]))).get(ingesterId) ?? []).map((f) => f.id);

describe('FlowCache', () => {
  it('loads active flows with compiled filters and keeps them for the TTL', async () => {
    const s = await setup();
    let now = 1_000_000;
    const cache = new FlowCache(db.pool, 5000, undefined, () => now);
    const flows = (await cache.get(new Map([[s.ingesterId, s.tenantId]]))).get(s.ingesterId)!;
    expect(flows.map((f) => [f.id, f.destinationId, f.matchAll])).toEqual([[s.flowId, s.destinationId, false]]);
    expect(flows[0]!.filter.matches({ type: 'a.b', source: { ingester_id: s.ingesterId, provider: 'generic' }, headers: {}, query: {}, body: null })).toBe(true);

    await db.pool.query(`UPDATE delivery_flows SET state = 'DISABLED' WHERE id = $1`, [s.flowId]);
    now += 4000;
    expect(await ids(cache, s.ingesterId, s.tenantId)).toEqual([s.flowId]);
    now += 2000;
    expect(await ids(cache, s.ingesterId, s.tenantId)).toEqual([]);
  });

  it('drops entries when a config-change message arrives', async () => {
    const s = await setup();
    const other = await setup();
    const cache = new FlowCache(db.pool, 600_000);
    await onConfigChange(sub, t.prefix, (c) => cache.invalidate(c));
    expect(await ids(cache, s.ingesterId, s.tenantId)).toEqual([s.flowId]);
    expect(await ids(cache, other.ingesterId, other.tenantId)).toEqual([other.flowId]);

    const added = await insertFlow(db.pool, { tenantId: s.tenantId, ingesterId: s.ingesterId, destinationId: s.destinationId });
    await db.pool.query(`UPDATE delivery_flows SET state = 'DISABLED' WHERE id = $1`, [other.flowId]);
    await publishConfigChange(t.redis, t.prefix, { kind: 'flow', id: added, tenantId: s.tenantId });
    await waitFor(async () => (await ids(cache, s.ingesterId, s.tenantId)).length === 2, { what: 'the new flow to be seen' });
    // Another tenant's entry is untouched by this tenant's change.
    expect(await ids(cache, other.ingesterId, other.tenantId)).toEqual([other.flowId]);

    await publishConfigChange(t.redis, t.prefix, { kind: 'ingester', id: other.ingesterId, tenantId: other.tenantId });
    await waitFor(async () => (await ids(cache, other.ingesterId, other.tenantId)).length === 0, { what: 'the ingester entry to be dropped' });
  });

  it('drops everything when the subscriber reconnects, since announcements sent meanwhile were lost', async () => {
    const s = await setup();
    const cache = new FlowCache(db.pool, 600_000);
    const own = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
    try {
      await onConfigChange(own, t.prefix, (c) => cache.invalidate(c), () => cache.clear());
      expect(await ids(cache, s.ingesterId, s.tenantId)).toEqual([s.flowId]);
      // Disabled while the connection is down: the announcement never reaches this router.
      own.disconnect(true);
      await db.pool.query(`UPDATE delivery_flows SET state = 'DISABLED' WHERE id = $1`, [s.flowId]);
      await waitFor(async () => (await ids(cache, s.ingesterId, s.tenantId)).length === 0, { what: 'the cache to be dropped on reconnect' });
    } finally {
      own.disconnect();
    }
  });

  it('drops expired entries once the map has grown, not only when an ingester is seen again', async () => {
    let now = 1_000_000;
    const cache = new FlowCache(db.pool, 1000, undefined, () => now);
    // Ingesters seen once (unknown ids cache an empty list just the same).
    const once = new Map(Array.from({ length: 1100 }, (_, i) => [`ing_once_${i}`, 'ten_x']));
    await cache.get(once);
    expect(cache.size).toBe(1100);
    now += 2000;
    const s = await setup();
    expect(await ids(cache, s.ingesterId, s.tenantId)).toEqual([s.flowId]);
    expect(cache.size).toBe(1);
  });

  it('marks an empty filter as match-all and reports an invalid one', async () => {
    const { tenantId } = await seedTenant(db.pool);
    const ingesterId = await insertIngester(db.pool, tenantId);
    const destinationId = await insertDestination(db.pool, tenantId);
    const all = await insertFlow(db.pool, { tenantId, ingesterId, destinationId, filter: {} });
    const bad = await insertFlow(db.pool, { tenantId, ingesterId, destinationId, filter: { jsonpath: '$[' } });
    const invalid: string[] = [];
    const cache = new FlowCache(db.pool, 0, (flowId) => invalid.push(flowId));
    const flows = (await cache.get(new Map([[ingesterId, tenantId]]))).get(ingesterId)!;
    expect(flows.find((f) => f.id === all)!.matchAll).toBe(true);
    expect(flows.find((f) => f.id === bad)).toMatchObject({ matchAll: false, filter: { valid: false } });
    expect(invalid).toEqual([bad]);
  });
  it("compiles the ingester's filter once per fill, keeps it with the flows, and reports an invalid one", async () => {
    const s = await setup();
    await db.pool.query(`UPDATE ingesters SET filters = $2 WHERE id = $1`, [s.ingesterId, JSON.stringify({ match: { 'headers.X-Env': 'prod' } })]);
    let now = 1_000_000;
    const cache = new FlowCache(db.pool, 5000, undefined, () => now);
    const key = new Map([[s.ingesterId, s.tenantId]]);
    const first = (await cache.lookup(key)).get(s.ingesterId)!;
    const doc = (env: string) => ({ type: 'a.b', source: { ingester_id: s.ingesterId, provider: 'generic' }, headers: { 'x-env': env }, query: {}, body: null });
    expect(first.ingesterFilter).toMatchObject({ valid: true });
    expect([first.ingesterFilter!.matches(doc('prod')), first.ingesterFilter!.matches(doc('dev'))]).toEqual([true, false]);
    now += 1000;
    // A hit: the same compiled filter, not a new one per event.
    expect((await cache.lookup(key)).get(s.ingesterId)!.ingesterFilter).toBe(first.ingesterFilter);

    // None, or {}: nothing to run.
    for (const none of [null, {}]) {
      await db.pool.query(`UPDATE ingesters SET filters = $2::jsonb WHERE id = $1`, [s.ingesterId, none === null ? null : JSON.stringify(none)]);
      cache.invalidate({ kind: 'ingester', id: s.ingesterId, tenantId: s.tenantId });
      expect((await cache.lookup(key)).get(s.ingesterId)!.ingesterFilter).toBeNull();
    }

    await db.pool.query(`UPDATE ingesters SET filters = $2 WHERE id = $1`, [s.ingesterId, JSON.stringify({ jsonpath: '$[' })]);
    const invalid: Array<[string, string | undefined]> = [];
    const reporting = new FlowCache(db.pool, 0, (id, _errors, kind) => invalid.push([id, kind]));
    const bad = (await reporting.lookup(key)).get(s.ingesterId)!;
    expect(bad.ingesterFilter).toMatchObject({ valid: false });
    expect(bad.ingesterFilter!.matches(doc('prod'))).toBe(false);
    expect(invalid).toEqual([[s.ingesterId, 'ingester']]);
  });
});
