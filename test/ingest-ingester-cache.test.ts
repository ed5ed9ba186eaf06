// The ingester cache keeps unknown ids (misses) apart from ingesters (hits), each bounded and
// evicted oldest first, one entry at a time: a flood of random ids can neither grow memory
// nor push real ingesters out (each of which would then cost a PostgreSQL query per TTL).
// PostgreSQL lookups are counted through a wrapped pool of the test schema.
import { newId, type Pool } from '@hookline/db';
import { createSecretBox } from '@hookline/signing';
import { createTestDatabase, seedTenant, type TestDatabase } from '@hookline/testing';
import { createIngesterCache } from '../services/ingest/src/ingester-cache';

/** The cache's default bound on unknown ids (MAX_MISSES in ingester-cache.ts). */
const MISS_BOUND = 50_000;
const TTL = 600_000;

let db: TestDatabase;
const box = createSecretBox('ingest-cache-tests-secrets-key-0123');

beforeAll(async () => {
  db = await createTestDatabase('ingcache');
});
afterAll(() => db.drop());

/** The test schema's pool, counting ingester lookups by id. */
function countingPool(): { pool: Pool; lookups: Map<string, number> } {
  const lookups = new Map<string, number>();
  const pool = {
    query: (q: { values?: unknown[] }, ...rest: unknown[]) => {
      const id = String(q.values?.[0]);
      lookups.set(id, (lookups.get(id) ?? 0) + 1);
      return (db.pool.query as (...a: unknown[]) => unknown)(q, ...rest);
    },
  } as unknown as Pool;
  return { pool, lookups };
}

async function seedIngester(tenantId?: string): Promise<{ id: string; tenantId: string }> {
  const tid = tenantId ?? (await seedTenant(db.pool)).tenantId;
  const id = newId('ing');
  await db.pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ($1, $2, 't', 'generic', now())`, [id, tid]);
  return { id, tenantId: tid };
}

async function getAll(get: (id: string) => Promise<unknown>, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) await Promise.all(ids.slice(i, i + 500).map(get));
}

test('more unknown ids than the miss bound: a known ingester stays cached (no new lookup) and misses stay bounded, oldest out first', async () => {
  const known = await seedIngester();
  const { pool, lookups } = countingPool();
  const cache = createIngesterCache(pool, box, TTL, 300);
  expect((await cache.get(known.id))?.id).toBe(known.id);
  expect(lookups.get(known.id)).toBe(1);

  const unknown = Array.from({ length: MISS_BOUND + 100 }, (_, i) => `ing_flood_${i}`);
  await getAll((id) => cache.get(id), unknown);
  expect(await cache.get(unknown.at(-1)!)).toBeNull();

  // The known ingester is still served from memory.
  expect((await cache.get(known.id))?.id).toBe(known.id);
  expect(lookups.get(known.id)).toBe(1);
  expect(cache.size()).toEqual({ hits: 1, misses: MISS_BOUND });
  // The newest misses are still cached; the oldest were dropped one by one.
  expect(lookups.get(unknown.at(-1)!)).toBe(1);
  expect(await cache.get(unknown[0]!)).toBeNull();
  expect(lookups.get(unknown[0]!)).toBe(2);
  expect(cache.size()).toEqual({ hits: 1, misses: MISS_BOUND });
});

test('hits are bounded the same way, oldest out first; misses never push them out', async () => {
  const a = await seedIngester();
  const b = await seedIngester();
  const c = await seedIngester();
  const { pool, lookups } = countingPool();
  const cache = createIngesterCache(pool, box, TTL, 300, undefined, { maxHits: 2, maxMisses: 3 });
  for (const x of [a, b, c]) await cache.get(x.id);
  expect(cache.size()).toEqual({ hits: 2, misses: 0 });
  await getAll((id) => cache.get(id), ['ing_m1', 'ing_m2', 'ing_m3', 'ing_m4', 'ing_m5']);
  expect(cache.size()).toEqual({ hits: 2, misses: 3 });
  await cache.get(b.id);
  await cache.get(c.id);
  expect([lookups.get(b.id), lookups.get(c.id)]).toEqual([1, 1]);
  await cache.get(a.id);
  expect(lookups.get(a.id)).toBe(2);
  expect(cache.size()).toEqual({ hits: 2, misses: 3 });
});

test('TTL: with 0 every request looks the ingester up again; misses too', async () => {
  const a = await seedIngester();
  const { pool, lookups } = countingPool();
  const cache = createIngesterCache(pool, box, 0, 300);
  await cache.get(a.id);
  await cache.get(a.id);
  await cache.get('ing_nope');
  await cache.get('ing_nope');
  expect([lookups.get(a.id), lookups.get('ing_nope')]).toEqual([2, 2]);
  expect(cache.size()).toEqual({ hits: 1, misses: 1 });
});

test('an announcement drops what it names: an ingester change its hit or its miss, a tenant change its ingesters; clear() drops all', async () => {
  const a = await seedIngester();
  const a2 = await seedIngester(a.tenantId);
  const b = await seedIngester();
  const { pool, lookups } = countingPool();
  const cache = createIngesterCache(pool, box, TTL, 300);
  const created = newId('ing');
  for (const id of [a.id, a2.id, b.id, created]) await cache.get(id);
  expect(await cache.get(created)).toBeNull();
  expect(cache.size()).toEqual({ hits: 3, misses: 1 });

  // Created after its miss was cached: the announcement makes it known at once.
  await db.pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ($1, $2, 't', 'generic', now())`, [created, b.tenantId]);
  cache.invalidate({ kind: 'ingester', id: created, tenantId: b.tenantId });
  expect((await cache.get(created))?.id).toBe(created);
  expect(cache.size()).toEqual({ hits: 4, misses: 0 });

  cache.invalidate({ kind: 'tenant', id: a.tenantId, tenantId: a.tenantId });
  expect(cache.size()).toEqual({ hits: 2, misses: 0 });
  for (const id of [a.id, a2.id, b.id]) await cache.get(id);
  expect([lookups.get(a.id), lookups.get(a2.id), lookups.get(b.id)]).toEqual([2, 2, 1]);

  cache.invalidate({ kind: 'ingester', id: b.id, tenantId: b.tenantId });
  await cache.get(b.id);
  expect(lookups.get(b.id)).toBe(2);

  cache.clear();
  expect(cache.size()).toEqual({ hits: 0, misses: 0 });
});
