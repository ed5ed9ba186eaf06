// U+0000 in what ingest stores as text (the event type, a provider's delivery id) used to
// fail the whole group commit: every event of the batch, of any tenant, answered 503, on
// each retry of the sender. Now the type is refused (400) and such an id is stored hashed;
// and a batch PostgreSQL refuses for one row is written event by event, so only that row fails.
import { randomUUID } from 'node:crypto';
import { createLogger } from '@hookline/logger';
import { createEventBatcher } from '../services/ingest/src/event-batcher';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { signAs } from '../services/ingest/src/testing/sign-request';
import { pendingEvent } from '../services/ingest/src/testing/pending-event';
import type { PendingEvent } from '../services/ingest/src/write-batch';

let h: IngestHarness;
const logger = createLogger('ingest-nul-test', 'error');
logger.silent = true;

beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingnul' });
});
afterAll(() => h.close());

const stored = async (ingesterId: string): Promise<{ type: string | null; dedup_key: string | null }[]> =>
  (await h.db.pool.query('SELECT type, dedup_key FROM events WHERE ingester_id = $1 ORDER BY received_at, id', [ingesterId])).rows;

test('an event type holding U+0000 is refused with a 400 naming the field; nothing is stored, the rejection is recorded', async () => {
  const { ingesterId } = await h.seedIngester();
  const res = await h.post(ingesterId, '{"type":"order\\u0000created"}');
  expect([res.status, res.json['type'], res.json['reason_code'], res.json['errors']]).toEqual([400, expect.stringMatching(/validation-error$/), 'validation_error', [{ field: 'type', message: 'must not contain U+0000' }]]);
  expect(res.json['instance']).toBe(res.headers.get('x-request-id'));
  expect(await stored(ingesterId)).toEqual([]);
  const { rows } = await h.db.pool.query('SELECT reason_code, detail FROM ingest_rejections WHERE ingester_id = $1', [ingesterId]);
  expect(rows).toEqual([{ reason_code: 'validation_error', detail: 'event type contains U+0000' }]);
  // The same endpoint still takes an ordinary event.
  expect((await h.post(ingesterId, '{"type":"order.created"}')).status).toBe(202);
});

test("a provider's delivery id holding U+0000 is stored as its hash and still deduplicates", async () => {
  const { ingesterId } = await h.seedIngester({ provider: 'stripe', secrets: ['st'] });
  const body = `{"id":"evt_${randomUUID()}\\u0000x","type":"charge.succeeded"}`;
  const first = await h.post(ingesterId, body, signAs('stripe', 'st', body));
  expect(first.status).toBe(202);
  const again = await h.post(ingesterId, body, signAs('stripe', 'st', body));
  expect([again.status, again.json['event_id'], again.headers.get('idempotent-replayed')]).toEqual([202, first.json['event_id'], 'true']);
  expect(await stored(ingesterId)).toEqual([{ type: 'charge.succeeded', dedup_key: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) }]);
});

test('a batch PostgreSQL refuses for one row: that event fails (503), the others of the batch are stored and routed', async () => {
  const a = await h.seedIngester();
  const b = await h.seedIngester();
  const event = (ids: { ingesterId: string; tenantId: string }, type: string): PendingEvent => pendingEvent(ids, { type });
  await h.jobs.queue('route').obliterate({ force: true });
  const batcher = createEventBatcher({ pool: h.db.pool, producer: h.jobs, logger }, { maxBatch: 50, maxInFlight: 1, dedupWindowSeconds: 60, enqueueTimeoutMs: 1000 });
  // Bypassing ingestEvent's check: a row PostgreSQL refuses (text with U+0000) among good ones of another tenant.
  const good = Array.from({ length: 6 }, (_, i) => event(a, `t${i}`));
  const bad = event(b, 'bad\u0000type');
  const answers = await Promise.allSettled([...good.slice(0, 3), bad, ...good.slice(3)].map((e) => batcher.submit(e)));
  await batcher.drain();
  expect(answers.map((r) => (r.status === 'fulfilled' ? r.value.kind : (r.reason as { status?: number }).status))).toEqual(['accepted', 'accepted', 'accepted', 503, 'accepted', 'accepted', 'accepted']);
  expect((await stored(a.ingesterId)).map((r) => r.type).sort()).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
  expect(await stored(b.ingesterId)).toEqual([]);
  const jobs = await h.jobs.queue('route').getJobs(['waiting']);
  expect(jobs.flatMap((j) => (j.data as { eventIds: string[] }).eventIds).sort()).toEqual(good.map((e) => e.eventId).sort());
});
