import { createLogger } from '@hookline/logger';
import { createPool } from '@hookline/db';
import { freePort, waitFor } from '@hookline/testing';
import { createEventBatcher } from '../services/ingest/src/event-batcher';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { pendingEvent } from '../services/ingest/src/testing/pending-event';
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

const event = (n: number): PendingEvent => pendingEvent(ids, { type: `t${n}`, body: Buffer.from(String(n)) });

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
  await batcher.drain();
  expect(await jobSizes()).toEqual([1, 3, 3]);
});

test('what arrives in one turn of the event loop is one transaction and one job', async () => {
  await h.jobs.queue('route').obliterate({ force: true });
  const batcher = createEventBatcher({ pool: h.db.pool, producer: h.jobs, logger }, { maxBatch: 500, maxInFlight: 2, dedupWindowSeconds: 60, enqueueTimeoutMs: 1000 });
  const events = Array.from({ length: 25 }, (_, i) => event(i));
  await Promise.all(events.map((e) => batcher.submit(e)));
  await batcher.drain();
  expect(await jobSizes()).toEqual([25]);
  const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM event_payloads WHERE event_id = ANY($1)', [events.map((e) => e.eventId)]);
  expect(rows[0].n).toBe(25);
});

test('with a route linger, the ids of several commits leave as one job after the answers; a full job leaves at once', async () => {
  await h.jobs.queue('route').obliterate({ force: true });
  const batcher = createEventBatcher(
    { pool: h.db.pool, producer: h.jobs, logger },
    { maxBatch: 3, maxInFlight: 1, dedupWindowSeconds: 60, enqueueTimeoutMs: 1000, routeLingerMs: 60_000, routeBatchMax: 5 },
  );
  const events = Array.from({ length: 7 }, (_, i) => event(i));
  const outcomes = await Promise.all(events.map((e) => batcher.submit(e)));
  expect(outcomes.every((o) => o.kind === 'accepted')).toBe(true);
  // Commits of 3, 3 and 1: 3 ids linger; the second commit makes 6 >= 5, sent at once; 1 lingers.
  expect(await waitFor(async () => ((await jobSizes()).length > 0 ? jobSizes() : null), { what: 'the full route job' })).toEqual([6]);
  const more = [event(7), event(8)];
  await Promise.all(more.map((e) => batcher.submit(e)));
  expect(await jobSizes()).toEqual([6]); // answered, 3 ids still lingering (60 s)
  await batcher.drain(); // shutdown sends what is gathered at once
  expect(await jobSizes()).toEqual([3, 6]);
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
