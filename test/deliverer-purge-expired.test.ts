// The janitor's purge of rows nothing reads: idempotency records an hour past their expiry
// (ingest's dedup keys grew one row per keyed event for ever), and ingest rejections past
// their retention. Live records, recently expired ones and young rejections stay.
import { newId } from '@hookline/db';
import { createTestDatabase, flushPrefix, seedTenant, startService, uniquePrefix, waitFor, type TestDatabase } from '@hookline/testing';
import { TEST_ENV } from './deliverer-fixtures';
import { purgeExpired } from '../services/deliverer/src/purge-expired';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase('purgeexp');
});
afterAll(async () => {
  await db.drop();
});

const DAY = 86_400_000;

test('deletes idempotency records past expiry + 1 h and rejections past retention, in batches; keeps the rest', async () => {
  const t = await seedTenant(db.pool);
  const record = (key: string, expiresIn: string) =>
    db.pool.query(`INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, expires_at) VALUES ('ingest:ing_x', $1, $2, 'h', 202, now() + $3::interval)`, [key, t.tenantId, expiresIn]);
  for (let i = 0; i < 5; i++) await record(`old-${i}`, '-2 hours');
  await record('just-expired', '-10 minutes');
  await record('live', '1 hour');
  const rejection = (ageMs: number) =>
    db.pool.query(`INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code) VALUES ($1, $2, 'ing_x', 'signature_mismatch') RETURNING id`, [newId('rej', Date.now() - ageMs), t.tenantId]);
  const old = await Promise.all([40, 31, 35].map((d) => rejection(d * DAY)));
  const young = await Promise.all([29, 1, 0].map((d) => rejection(d * DAY)));

  const r = await purgeExpired(db.pool, { rejectionRetentionMs: 30 * DAY, batch: 2 });
  expect(r).toEqual({ idempotency_records: 5, ingest_rejections: 3 });
  const keys = (await db.pool.query('SELECT key FROM idempotency_records ORDER BY key')).rows.map((x) => x.key);
  expect(keys).toEqual(['just-expired', 'live']);
  const ids = (await db.pool.query('SELECT id FROM ingest_rejections ORDER BY id')).rows.map((x) => x.id);
  expect(ids).toEqual(young.map((q) => q.rows[0].id).sort());
  expect(ids).not.toEqual(expect.arrayContaining([old[0]!.rows[0].id]));

  // A retention longer than the epoch keeps every rejection (its cut-off is no id).
  expect(await purgeExpired(db.pool, { rejectionRetentionMs: 100 * 365 * DAY })).toEqual({ idempotency_records: 0, ingest_rejections: 0 });
  expect((await db.pool.query('SELECT count(*)::int AS n FROM ingest_rejections')).rows[0].n).toBe(3);
  // A run with nothing to do deletes nothing; maxBatches bounds one run.
  expect(await purgeExpired(db.pool, { rejectionRetentionMs: 30 * DAY })).toEqual({ idempotency_records: 0, ingest_rejections: 0 });
  for (let i = 0; i < 6; i++) await record(`more-${i}`, '-3 hours');
  expect(await purgeExpired(db.pool, { rejectionRetentionMs: 30 * DAY, batch: 2, maxBatches: 2 })).toEqual({ idempotency_records: 4, ingest_rejections: 0 });
});

test('the deliverer process runs it every PURGE_INTERVAL_MS, with INGEST_REJECTION_RETENTION_MS', async () => {
  const t = await seedTenant(db.pool);
  await db.pool.query(`INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, expires_at) VALUES ('ingest:ing_p', 'gone', $1, 'h', 202, now() - interval '2 hours'), ('ingest:ing_p', 'kept', $1, 'h', 202, now() + interval '1 hour')`, [t.tenantId]);
  const [old, young] = [newId('rej', Date.now() - 3 * DAY), newId('rej', Date.now() - 60_000)];
  await db.pool.query(`INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code) VALUES ($1, $3, 'ing_p', 'x'), ($2, $3, 'ing_p', 'x')`, [old, young, t.tenantId]);
  const prefix = uniquePrefix('purgeexp');
  const proc = await startService('deliverer', { ...TEST_ENV, DATABASE_URL: db.url, QUEUE_PREFIX: prefix, PURGE_INTERVAL_MS: '200', INGEST_REJECTION_RETENTION_MS: String(2 * DAY) });
  try {
    await waitFor(async () => (await db.pool.query(`SELECT 1 FROM ingest_rejections WHERE id = $1`, [old])).rowCount === 0 || null, { what: 'the old rejection purged', timeoutMs: 20_000 });
    expect((await db.pool.query(`SELECT key FROM idempotency_records WHERE scope = 'ingest:ing_p' ORDER BY key`)).rows.map((r) => r.key)).toEqual(['kept']);
    expect((await db.pool.query(`SELECT id FROM ingest_rejections WHERE ingester_id = 'ing_p'`)).rows.map((r) => r.id)).toEqual([young]);
  } finally {
    await proc.stop();
    await flushPrefix(prefix);
  }
});
