// A report's started_at must be a real instant inside the window an attempt under a lease can
// have started in (services/api/src/edge/report-times.ts), else the whole request is a 400
// validation problem naming the field and nothing of it is recorded: a time far off used to be
// stored as given and stop evidence receipts for every tenant, a leap second used to be a 500
// the agent retried for ever.
import { createTestDatabase, flushPrefix, seedTenant, startService, uniquePrefix, type ServiceProcess, type TestDatabase } from '@hookline/testing';
import { attemptsOf, deliveryRow, edgePost, insertCluster, insertEdgeDelivery, SECRETS_KEY } from './edge-fixtures';

jest.setTimeout(60_000);

let db: TestDatabase;
let api: ServiceProcess;
let prefix: string;
let tenantId: string;
let cluster: { id: string; key: string };

const work = () => edgePost(api.url, `/v1/edge/clusters/${cluster.id}/work`, cluster.key, { max: 10, wait_seconds: 0 });
const report = (reports: Record<string, unknown>[]) => edgePost(api.url, `/v1/edge/clusters/${cluster.id}/reports`, cluster.key, { reports });
const answer = (item: { id: string; lease_owner: string }, startedAt: string | Date = new Date()) => ({
  delivery_id: item.id,
  lease_owner: item.lease_owner,
  status_code: 200,
  response_body: 'ok',
  response_headers: null,
  error_kind: null,
  error: null,
  started_at: typeof startedAt === 'string' ? startedAt : startedAt.toISOString(),
  duration_ms: 86_400_000,
});

/** Deliveries leased by `n` separate polls (so `n` lease owners: the api records each owner's reports in its own transaction). */
async function leased(n: number): Promise<{ id: string; lease_owner: string }[]> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id);
    const got = await work();
    expect(got.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
    out.push(got.body.deliveries[0]);
  }
  return out;
}

async function untouched(items: { id: string }[]): Promise<void> {
  for (const it of items) {
    expect(await deliveryRow(db.pool, it.id)).toMatchObject({ status: 'delivering', attempt_count: 0 });
    expect(await attemptsOf(db.pool, it.id)).toEqual([]);
  }
}

function expectProblem(res: { status: number; body: any }, fields: string[]): void {
  expect(res.status).toBe(400);
  expect(res.body.type).toMatch(/validation-error$/);
  expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(fields);
}

beforeAll(async () => {
  db = await createTestDatabase('edgetimes');
  prefix = uniquePrefix('edgetimes');
  tenantId = (await seedTenant(db.pool)).tenantId;
  cluster = await insertCluster(db.pool, tenantId);
  // Default lease (60 s) and signature tolerance (300 s): the window is 11.5 min back, 5 min ahead.
  api = await startService('api', { DATABASE_URL: db.url, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', QUEUE_PREFIX: prefix, SECRETS_KEY, DB_POOL_MAX: '4' });
});

afterAll(async () => {
  await api?.stop();
  await db?.drop();
  await flushPrefix(prefix);
});

test('a report that started in year 9999 is refused with the batch: nothing recorded, its field named', async () => {
  const [ok, far] = await leased(2);
  const res = await report([answer(ok!), answer(far!, '9999-12-31T23:59:59Z')]);
  expectProblem(res, ['reports.1.started_at']);
  expect(res.body.errors[0].message).toMatch(/^must be between \S+Z and \S+Z/);
  await untouched([ok!, far!]);
  // The agent splits a refused batch: the good report alone is recorded.
  expect((await report([answer(ok!)])).body.results).toEqual([{ delivery_id: ok!.id, result: 'recorded', attempt: 1, status: 'delivered' }]);
});

test('a started_at the date-time format takes but that is no instant (a leap second, an offset without minutes) is a 400, not a 500 that half-applies the batch', async () => {
  // The good report is first and of another lease owner: its transaction used to commit before the bad one's failed.
  const [ok, leap, short] = await leased(3);
  const res = await report([answer(ok!), answer(leap!, '2016-12-31T23:59:60Z'), answer(short!, '2020-01-01T00:00:00+00')]);
  expectProblem(res, ['reports.1.started_at', 'reports.2.started_at']);
  expect(res.body.errors[0].message).toMatch(/RFC 3339 date-time/);
  await untouched([ok!, leap!, short!]);
});

test('the window: from longest lease + tolerance + a lease before the service\'s clock to the tolerance after it', async () => {
  const [a, b, c, d] = await leased(4);
  const now = Date.now();
  // Longest lease: leaseMsFor(60 s, 300 s) = 330 s; + 300 s + 60 s = 690 s back; 300 s ahead.
  expectProblem(await report([answer(a!, new Date(now - 700_000))]), ['reports.0.started_at']);
  expectProblem(await report([answer(b!, new Date(now + 310_000))]), ['reports.0.started_at']);
  await untouched([a!, b!]);
  const inside = await report([answer(c!, new Date(now - 660_000)), answer(d!, new Date(now + 280_000))]);
  expect(inside.body.results.map((r: { result: string }) => r.result)).toEqual(['recorded', 'recorded']);
  const { rows } = await db.pool.query('SELECT started_at FROM delivery_attempts WHERE delivery_id = $1', [c!.id]);
  expect(rows[0].started_at.getTime()).toBe(now - 660_000);
});
