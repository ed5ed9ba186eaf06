import { createLogger } from '@hookline/logger';
import { createPool, newId } from '@hookline/db';
import { freePort } from '@hookline/testing';
import { createEventBatcher } from '../services/ingest/src/event-batcher';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import type { PendingEvent } from '../services/ingest/src/write-batch';

let h: IngestHarness;
let ids: { ingesterId: string; tenantId: string };
const logger = createLogger('ingest-batcher-test', 'error');
logger.silent = true;

beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingbatch' });
  ids = await h.seedIngester();
});
afterAll(() => h.close());

const event = (n: number): PendingEvent => ({
  eventId: newId('evt'),
  tenantId: ids.tenantId,
  ingesterId: ids.ingesterId,
  type: `t${n}`,
  correlationId: 'c'.repeat(32),
  dedupKey: null,
  sourceIp: '127.0.0.1',
  receivedAt: new Date(),
  contentType: null,
  headers: {},
  query: null,
  body: Buffer.from(String(n)),
});

const jobSizes = async (): Promise<number[]> => {
  const jobs = await h.jobs.queue('route').getJobs(['waiting']);
  return jobs.map((j) => (j.data as { eventIds: string[] }).eventIds.length).sort((a, b) => a - b);
};

test('requests waiting while a flush is busy join the next one; batches are capped at maxBatch; one route job each', async () => {
  await h.jobs.queue('route').obliterate({ force: true });
  const batcher = createEventBatcher({ pool: h.db.pool, producer: h.jobs, logger }, { maxBatch: 3, maxInFlight: 1, dedupWindowSeconds: 60, enqueueTimeoutMs: 1000 });
  const events = Array.from({ length: 7 }, (_, i) => event(i));
  const outcomes = await Promise.all(events.map((e) => batcher.submit(e)));
  expect(outcomes).toEqual(events.map((e) => ({ kind: 'accepted', eventId: e.eventId })));
  expect(await jobSizes()).toEqual([1, 3, 3]);
  await batcher.drain();
});

test('what arrives in one turn of the event loop is one transaction and one job', async () => {
  await h.jobs.queue('route').obliterate({ force: true });
  const batcher = createEventBatcher({ pool: h.db.pool, producer: h.jobs, logger }, { maxBatch: 500, maxInFlight: 2, dedupWindowSeconds: 60, enqueueTimeoutMs: 1000 });
  const events = Array.from({ length: 25 }, (_, i) => event(i));
  await Promise.all(events.map((e) => batcher.submit(e)));
  expect(await jobSizes()).toEqual([25]);
  const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM event_payloads WHERE event_id = ANY($1)', [events.map((e) => e.eventId)]);
  expect(rows[0].n).toBe(25);
});

test('PostgreSQL failing: every waiting request gets a 503 AppError and drain still resolves', async () => {
  const dead = createPool(`postgresql://postgres@127.0.0.1:${await freePort()}/test`, 1);
  const batcher = createEventBatcher({ pool: dead, producer: h.jobs, logger }, { maxBatch: 2, maxInFlight: 1, dedupWindowSeconds: 60, enqueueTimeoutMs: 1000 });
  const results = await Promise.allSettled([1, 2, 3].map((n) => batcher.submit(event(n))));
  for (const r of results) {
    expect(r.status).toBe('rejected');
    // The AppError that the server turns into a 503 problem.
    expect((r as PromiseRejectedResult).reason).toMatchObject({ name: 'AppError', status: 503, type: 'service-unavailable' });
  }
  await batcher.drain();
  await dead.end();
});
