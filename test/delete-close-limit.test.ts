// A delete's own close is bounded: the DELETE of a destination or flow moves at most
// DELETE_CLOSE_INLINE_LIMIT of its open deliveries to the DLQ in its transaction (lowest
// ids first) and leaves the rest to the deliverer's janitor, which closes them with the
// same definition; the delete's announcement wakes the janitor at once.
import { createLogger } from '@hookline/logger';
import { createRedis } from '@hookline/queues';
import { waitFor } from '@hookline/testing';
import { runJanitor } from '../services/deliverer/src/close-deleted';
import { wakeJanitorOnDeletes } from '../services/deliverer/src/janitor-wakeup';
import { every } from '../services/deliverer/src/periodic';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, type Pipeline } from './api-fixtures';

jest.setTimeout(60_000);

const LIMIT = 3;
let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('dellimit', { DELETE_CLOSE_INLINE_LIMIT: String(LIMIT) });
});
afterAll(async () => {
  await h.close();
});

interface Row {
  id: string;
  status: string;
  last_error: string | null;
}

const rows = async (ids: string[]): Promise<Row[]> =>
  (await h.db.pool.query<Row>('SELECT id, status::text AS status, last_error FROM deliveries WHERE id = ANY($1::text[]) ORDER BY id', [ids])).rows;
const eventStatus = async (id: string): Promise<string> => (await h.db.pool.query('SELECT status::text AS status FROM events WHERE id = $1', [id])).rows[0].status;

/** `statuses.length` deliveries of `p`, each for a new event; sorted by id. */
async function deliveries(tenantId: string, p: Pipeline, statuses: string[]): Promise<{ id: string; eventId: string }[]> {
  const out = [];
  for (const status of statuses) {
    const eventId = await insertEvent(h, tenantId, p.ingesterId);
    out.push({ id: await insertDelivery(h, tenantId, eventId, p, { status, attempts: status === 'pending' ? 0 : 2, at: new Date(Date.now() - 60_000) }), eventId });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

async function del(t: { tenantId: string; apiKey: string }, path: string): Promise<void> {
  const base = `/v1/tenants/${t.tenantId}/${path}`;
  expect((await h.call('POST', `${base}/disable`, { key: t.apiKey })).status).toBe(200);
  const res = await h.call('DELETE', base, { key: t.apiKey });
  expect(res.status).toBe(200);
  expect(res.body.state).toBe('DELETED');
}

test('deleting a destination with more open deliveries than the limit closes exactly the limit (lowest ids), leaves the rest open, and the janitor closes the rest', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey, 'dst');
  const open = await deliveries(t.tenantId, p, ['pending', 'failed', 'replaying', 'pending', 'failed']);
  const [delivered] = await deliveries(t.tenantId, p, ['delivered']);

  await del(t, `destinations/${p.destinationId}`);
  const after = await rows(open.map((d) => d.id));
  expect(after.map((r) => r.status)).toEqual(['exhausted', 'exhausted', 'exhausted', 'pending', 'failed']);
  for (const r of after.slice(0, LIMIT)) expect(r.last_error).toMatch(/^destination_deleted: /);
  expect(await Promise.all(open.map((d) => eventStatus(d.eventId)))).toEqual(['dlq_queued', 'dlq_queued', 'dlq_queued', 'filtered', 'filtered']);

  expect(await runJanitor(h.db.pool)).toEqual({ destination: 2, flow: 0, held: 0, more: false });
  for (const r of await rows(open.map((d) => d.id))) expect(r).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^destination_deleted: /) });
  for (const d of open) expect(await eventStatus(d.eventId)).toBe('dlq_queued');
  expect((await rows([delivered!.id]))[0]!.status).toBe('delivered');
});

test('deleting a flow: the same bound, the rest closed by the janitor as flow_deleted', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey, 'flow');
  const open = await deliveries(t.tenantId, p, ['pending', 'pending', 'failed', 'pending']);

  await del(t, `delivery-flows/${p.flowId}`);
  expect((await rows(open.map((d) => d.id))).map((r) => r.status)).toEqual(['exhausted', 'exhausted', 'exhausted', 'pending']);

  expect(await runJanitor(h.db.pool)).toEqual({ destination: 0, flow: 1, held: 0, more: false });
  for (const r of await rows(open.map((d) => d.id))) expect(r).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^flow_deleted: /) });
});

test("the delete's announcement wakes the deliverer's janitor, which closes the rest at once", async () => {
  // A deliverer's janitor whose interval would not come round during the test.
  const subscriber = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
  const closedByJanitor: number[] = [];
  const janitor = every(3_600_000, 'janitor', createLogger('dellimit-test', 'error'), async () => {
    const r = await runJanitor(h.db.pool);
    if (r) closedByJanitor.push(r.destination);
  });
  try {
    await wakeJanitorOnDeletes(subscriber, h.prefix, janitor);
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'woken');
    const open = await deliveries(t.tenantId, p, ['pending', 'pending', 'pending', 'failed', 'failed', 'pending']);
    await del(t, `destinations/${p.destinationId}`);
    await waitFor(async () => closedByJanitor.length > 0, { timeoutMs: 10_000, what: 'the janitor woken by the delete' });
    // The delete closed 3, the janitor the other 3.
    expect(closedByJanitor).toEqual([open.length - LIMIT]);
    for (const r of await rows(open.map((d) => d.id))) expect(r).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^destination_deleted: /) });
    for (const d of open) expect(await eventStatus(d.eventId)).toBe('dlq_queued');
  } finally {
    await janitor.stop();
    subscriber.disconnect();
  }
});
