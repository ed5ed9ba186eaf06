// A failed delivery's retry is scheduled as soon as its outcome is recorded, not once the
// slowest request of its chunk has finished.
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await createHarness('dlvpromptretry');
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

test('the second attempt of a failed delivery reaches its receiver while a slow sibling of its chunk is still open', async () => {
  const slow = await startReceiver(() => ({ status: 200, delayMs: 8_000 }));
  receivers.push(slow);
  // At its second request, is the slow sibling's request still waiting for its answer?
  let siblingOpenAtRetry: boolean | undefined;
  const failing = await startReceiver((n) => {
    if (n === 2) siblingOpenAtRetry = slow.requests.length === 1 && slow.requests[0]!.answeredAt === undefined;
    return { status: 500 };
  });
  receivers.push(failing);
  const f = await h.destination(failing.url, { config: { retry_schedule_ms: [100], max_attempts: 3 } });
  const s = await h.destination(slow.url, { config: { timeout_ms: 20_000 } });
  const df = await h.delivery(f.id);
  const ds = await h.delivery(s.id);

  h.startWorker(4);
  await h.enqueue([df.deliveryId, ds.deliveryId]); // one job, one chunk
  await waitFor(() => failing.requests.length >= 2, { what: 'the retry', timeoutMs: 30_000 });
  expect(siblingOpenAtRetry).toBe(true);

  await waitFor(async () => (await h.row(ds.deliveryId)).status === 'delivered', { what: 'the slow sibling delivered', timeoutMs: 30_000 });
  expect((await h.attempts(df.deliveryId)).map((a) => a.status_code).slice(0, 2)).toEqual([500, 500]);
});
