// The deliverer's send/record/retry path against local receivers, real PostgreSQL and Redis.
import { Webhook } from 'standardwebhooks';
import { destinationHealthKey } from '@hookline/queues';
import { createSecretBox, newWhsecSecret, verifyServiceSignature, whsecKey } from '@hookline/signing';
import { freePort, startReceiver, waitFor, type ReceivedRequest, type Receiver, type ReceiverBehaviour } from '@hookline/testing';
import { replayMatching } from '../services/api/src/replay/replay.service';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
const receivers: Receiver[] = [];

async function receiver(b?: ReceiverBehaviour): Promise<Receiver> {
  const r = await startReceiver(b);
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  // Retry-After is bounded at 1.5 s here so that the bound itself can be observed.
  h = await createHarness('dlvsend', { RETRY_AFTER_MAX_MS: '1500' });
  h.startWorker();
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

const delivered = (id: string) => waitFor(async () => ((await h.row(id)).status === 'delivered' ? h.row(id) : null), { what: `${id} delivered` });
const exhausted = (id: string) => waitFor(async () => ((await h.row(id)).status === 'exhausted' ? h.row(id) : null), { what: `${id} exhausted` });

test('sends the exact bytes and content type, signed for both schemes, with the idempotency key and event headers', async () => {
  const rx = await receiver();
  const newest = 'whsec_' + Buffer.from('the newest secret, 32 bytes long').toString('base64');
  const older = 'whsec_' + Buffer.from('an older secret still active!!').toString('base64');
  const dst = await h.destination(`${rx.url}/in?src=test`, { method: 'PUT', config: { headers: { 'X-Team': 'billing', 'Webhook-Id': 'forged' } }, secrets: [newest, older] });
  const body = Buffer.from('{"b": 2,  "a":"caf\u00e9 \u2615"}\n');
  const { deliveryId, eventId } = await h.delivery(dst.id, { body, contentType: 'application/json; charset=utf-8', type: 'invoice.paid' });

  expect(await h.run([deliveryId])).toMatchObject({ claimed: 1, delivered: 1 });
  expect(rx.requests).toHaveLength(1);
  const got = rx.requests[0]!;
  expect(got.method).toBe('PUT');
  expect(got.url).toBe('/in?src=test');
  expect(Buffer.compare(got.body, body)).toBe(0);
  expect(got.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(got.headers['x-service-delivery-idempotency-key']).toBe(deliveryId);
  expect(got.headers['x-hookline-event-id']).toBe(eventId);
  expect(got.headers['x-hookline-event-type']).toBe('invoice.paid');
  expect(got.headers['x-team']).toBe('billing');
  expect(got.headers['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  const received = (await h.db.pool.query('SELECT received_at FROM events WHERE id = $1', [eventId])).rows[0].received_at as Date;
  expect(got.headers['x-hookline-ingested-at']).toBe(String(received.getTime()));

  // Standard Webhooks, checked by the public library with each active secret (rotation).
  const sw = { 'webhook-id': String(got.headers['webhook-id']), 'webhook-timestamp': String(got.headers['webhook-timestamp']), 'webhook-signature': String(got.headers['webhook-signature']) };
  expect(sw['webhook-id']).toBe(deliveryId);
  for (const secret of dst.secrets) expect(new Webhook(secret).verify(got.body, sw)).toEqual({ b: 2, a: 'café ☕' });
  expect(() => new Webhook('whsec_' + Buffer.from('some other secret entirely....').toString('base64')).verify(got.body, sw)).toThrow();
  // Hookline's own scheme: one v1 per active secret, the newest last, so either verifies (rotation).
  expect(String(got.headers['x-service-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  for (const secret of [newest, older]) {
    expect(verifyServiceSignature([whsecKey(secret)], got.body, String(got.headers['x-service-signature']), String(got.headers['x-service-timestamp']), 300)).toEqual({ ok: true });
  }
  const stranger = 'whsec_' + Buffer.from('some other secret entirely....').toString('base64');
  expect(verifyServiceSignature([whsecKey(stranger)], got.body, String(got.headers['x-service-signature']), String(got.headers['x-service-timestamp']), 300).ok).toBe(false);

  const row = await h.row(deliveryId);
  expect(row).toMatchObject({ status: 'delivered', attempt_count: 1, lease_owner: null, last_status_code: 200 });
  expect(row.delivered_at).not.toBeNull();
  const [att] = await h.attempts(deliveryId);
  expect(att).toMatchObject({ number: 1, status_code: 200, response_body: 'ok', error_kind: null });
  expect(att!.response_headers).toMatchObject({ 'content-type': 'text/plain' });
  expect((await h.event(eventId)).status).toBe('delivered');
});

test('fails twice then succeeds: three attempts, delivered, same idempotency key each time', async () => {
  const rx = await receiver((n) => ({ status: n <= 2 ? 503 : 200 }));
  const dst = await h.destination(rx.url);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  await h.enqueue([deliveryId]);
  await delivered(deliveryId);
  const attempts = await h.attempts(deliveryId);
  expect(attempts.map((a) => [a.number, a.status_code, a.error_kind])).toEqual([
    [1, 503, 'http_error'],
    [2, 503, 'http_error'],
    [3, 200, null],
  ]);
  expect(new Set(rx.requests.map((r) => r.headers['x-service-delivery-idempotency-key']))).toEqual(new Set([deliveryId]));
  // RETRY_SCHEDULE_MS=50,100,...: the gaps follow the schedule.
  expect(rx.requests[1]!.at - rx.requests[0]!.at).toBeGreaterThanOrEqual(50);
  expect(rx.requests[2]!.at - rx.requests[1]!.at).toBeGreaterThanOrEqual(100);
  expect((await h.event(eventId)).status).toBe('delivered');
});

test('always 500: exhausted after 5 attempts (the DLQ), event dlq_queued; a replay delivers with the same key', async () => {
  const rx = await receiver(() => ({ status: 500, body: 'down' }));
  const dst = await h.destination(rx.url);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  await h.enqueue([deliveryId]);
  const row = await exhausted(deliveryId);
  expect(row.attempt_count).toBe(5);
  expect(row.exhausted_at).not.toBeNull();
  expect(row.last_status_code).toBe(500);
  expect((await h.attempts(deliveryId)).map((a) => a.number)).toEqual([1, 2, 3, 4, 5]);
  expect(rx.requests).toHaveLength(5);
  const ev = await h.event(eventId);
  expect(ev.status).toBe('dlq_queued');
  expect(ev.failed_at).not.toBeNull();

  // What the API's replay does: replaying, one more replay, due now, and a job.
  rx.setBehaviour(() => ({ status: 200 }));
  await h.db.pool.query(`UPDATE deliveries SET status = 'replaying', replay_count = replay_count + 1, next_attempt_at = now() WHERE id = $1`, [deliveryId]);
  await h.db.pool.query(`UPDATE events SET status = 'replayed' WHERE id = $1`, [eventId]);
  await h.enqueue([deliveryId]);
  await delivered(deliveryId);
  expect(rx.requests[5]!.headers['x-service-delivery-idempotency-key']).toBe(deliveryId);
  expect((await h.attempts(deliveryId)).map((a) => a.number)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(await h.event(eventId)).toMatchObject({ status: 'delivered', status_reason: 'replayed' });
});

test('a replay is a fresh round: delivered at attempt 1, replayed against a failing receiver, exactly max_attempts more with growing backoff', async () => {
  const rx = await receiver((n) => ({ status: n === 1 ? 200 : 500 }));
  const old = await receiver((n) => ({ status: n === 1 ? 200 : 500 }));
  const { deliveryId, eventId } = await h.delivery((await h.destination(rx.url)).id);
  const legacy = await h.delivery((await h.destination(old.url)).id);
  expect(await h.run([deliveryId, legacy.deliveryId])).toMatchObject({ delivered: 2 });

  // The API's replay (REPLAY_SQL): the round starts at the attempt_count it finds.
  const replayDeps = { pool: h.db.pool, producer: h.deps.producer, logger: h.deps.logger };
  expect(await replayMatching(replayDeps, h.tenantId, { deliveryIds: [deliveryId], limit: 1 })).toEqual([{ id: deliveryId, eventId }]);
  expect(await h.db.pool.query('SELECT replay_count, round_start_attempt FROM deliveries WHERE id = $1', [deliveryId])).toMatchObject({ rows: [{ replay_count: 1, round_start_attempt: 1 }] });
  // A row replayed before round_start_attempt existed (left NULL): the old formula, whose
  // round ends at max_attempts × (replay_count + 1) = attempt 10.
  await h.db.pool.query(`UPDATE deliveries SET status = 'replaying', replay_count = replay_count + 1, next_attempt_at = now() WHERE id = $1`, [legacy.deliveryId]);
  await h.enqueue([legacy.deliveryId]);

  const row = await exhausted(deliveryId);
  expect(row.attempt_count).toBe(6);
  expect((await h.attempts(deliveryId)).map((a) => [a.number, a.status_code])).toEqual([[1, 200], [2, 500], [3, 500], [4, 500], [5, 500], [6, 500]]);
  expect(rx.requests).toHaveLength(6);
  // RETRY_SCHEDULE_MS=50,100,150,200: the round walks the schedule from its start.
  const gaps = rx.requests.slice(2).map((r, i) => r.at - rx.requests[i + 1]!.at);
  expect(gaps.map((g, i) => g >= [50, 100, 150, 200][i]!)).toEqual([true, true, true, true]);
  // The event was delivered before the re-send: it stays so (SPEC.md: delivered → acked only;
  // migration 20261129000000_delivered_events_stay), the delivery alone is in the DLQ.
  expect(await h.event(eventId)).toMatchObject({ status: 'delivered' });

  expect((await exhausted(legacy.deliveryId)).attempt_count).toBe(10);
  expect(old.requests).toHaveLength(10);
});

test('SPEC.md retry rules through the deliverer: a 408 is permanent, a 500 with Retry-After waits for it, retry_on_status [] refuses a 429', async () => {
  const timeout = await receiver(() => ({ status: 408 }));
  const busy = await receiver((n) => (n === 1 ? { status: 500, headers: { 'retry-after': '1' } } : { status: 200 }));
  const limited = await receiver(() => ({ status: 429, headers: { 'retry-after': '1' } }));
  const d408 = await h.delivery((await h.destination(timeout.url)).id);
  const d500 = await h.delivery((await h.destination(busy.url)).id);
  const d429 = await h.delivery((await h.destination(limited.url, { config: { retry_on_status: [] } })).id);
  expect(await h.run([d408.deliveryId, d500.deliveryId, d429.deliveryId])).toMatchObject({ claimed: 3, failed: 1, exhausted: 2 });
  expect(await h.row(d408.deliveryId)).toMatchObject({ status: 'exhausted', attempt_count: 1, last_status_code: 408 });
  expect(await h.row(d429.deliveryId)).toMatchObject({ status: 'exhausted', attempt_count: 1, last_status_code: 429 });
  const failed = await h.row(d500.deliveryId);
  expect(failed).toMatchObject({ status: 'failed', attempt_count: 1 });
  // Due the Retry-After (1 s) after the outcome was written, not the 50 ms of the schedule.
  expect(failed.next_attempt_at.getTime() - failed.updated_at.getTime()).toBe(1000);
});

test('a permanent 400 is not retried', async () => {
  const rx = await receiver(() => ({ status: 400, body: 'bad payload' }));
  const dst = await h.destination(rx.url);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  await h.enqueue([deliveryId]);
  const row = await exhausted(deliveryId);
  expect(row.attempt_count).toBe(1);
  await new Promise((r) => setTimeout(r, 400)); // longer than the whole retry schedule
  expect(rx.requests).toHaveLength(1);
  expect(await h.attempts(deliveryId)).toMatchObject([{ status_code: 400, error_kind: 'http_error', response_body: 'bad payload' }]);
  expect((await h.event(eventId)).status).toBe('dlq_queued');
});

test('Retry-After on 429 is honoured, and bounded by RETRY_AFTER_MAX_MS', async () => {
  const rx = await receiver((n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
  const dst = await h.destination(rx.url);
  const { deliveryId } = await h.delivery(dst.id);
  expect(await h.run([deliveryId])).toMatchObject({ failed: 1 });
  const [first] = await h.attempts(deliveryId);
  const failed = await h.row(deliveryId);
  const due = failed.next_attempt_at.getTime();
  expect(due - first!.started_at.getTime()).toBeGreaterThanOrEqual(1000);
  // Due exactly the Retry-After (1 s) after the outcome was written: next_attempt_at and
  // updated_at come from one statement's now(), so no elapsed time is assumed.
  expect(due - failed.updated_at.getTime()).toBe(1000);
  // The delayed job is due in ~1 s: nothing may be sent before then.
  await delivered(deliveryId);
  expect(rx.requests[1]!.at - rx.requests[0]!.at).toBeGreaterThanOrEqual(1000);

  const rx2 = await receiver(() => ({ status: 503, headers: { 'retry-after': '86400' } }));
  const dst2 = await h.destination(rx2.url, { config: { max_attempts: 2 } });
  const d2 = await h.delivery(dst2.id);
  await h.run([d2.deliveryId]);
  const [a2] = await h.attempts(d2.deliveryId);
  const row2 = await h.row(d2.deliveryId);
  const wait = row2.next_attempt_at.getTime() - a2!.started_at.getTime();
  expect(wait).toBeGreaterThanOrEqual(1500);
  expect(row2.next_attempt_at.getTime() - row2.updated_at.getTime()).toBe(1500);
});

test('a slow receiver is recorded as a timeout, a dropped connection as reset, a closed port as refused', async () => {
  const slow = await receiver(() => ({ status: 200, delayMs: 2000 }));
  const drop = await receiver(() => ({ status: 200, destroy: true }));
  const closedPort = await freePort();
  const d1 = await h.delivery((await h.destination(slow.url, { config: { timeout_ms: 200, max_attempts: 1 } })).id);
  const d2 = await h.delivery((await h.destination(drop.url, { config: { max_attempts: 1 } })).id);
  const d3 = await h.delivery((await h.destination(`http://127.0.0.1:${closedPort}/`, { config: { max_attempts: 1 } })).id);
  expect(await h.run([d1.deliveryId, d2.deliveryId, d3.deliveryId])).toMatchObject({ claimed: 3, exhausted: 3 });
  const [t] = await h.attempts(d1.deliveryId);
  expect(t).toMatchObject({ error_kind: 'timeout', status_code: null });
  expect(t!.duration_ms).toBeGreaterThanOrEqual(190);
  expect(t!.duration_ms).toBeLessThan(2000);
  expect((await h.attempts(d2.deliveryId))[0]).toMatchObject({ error_kind: 'reset', status_code: null });
  expect((await h.attempts(d3.deliveryId))[0]).toMatchObject({ error_kind: 'refused', status_code: null });
  expect((await h.row(d3.deliveryId)).last_error).toMatch(/ECONNREFUSED/);
});

test('a 3xx is a failure and is not followed; the response body is truncated to RESPONSE_BODY_LIMIT', async () => {
  const target = await receiver();
  const redirect = await receiver(() => ({ status: 302, headers: { location: `${target.url}/elsewhere`, 'x-request-id': 'req-42' } }));
  const big = await receiver(() => ({ status: 500, body: 'x'.repeat(10_000) }));
  const d1 = await h.delivery((await h.destination(redirect.url, { config: { max_attempts: 1 } })).id);
  const d2 = await h.delivery((await h.destination(big.url, { config: { max_attempts: 1 } })).id);
  await h.run([d1.deliveryId, d2.deliveryId]);
  expect(target.requests).toHaveLength(0);
  const [r] = await h.attempts(d1.deliveryId);
  expect(r).toMatchObject({ status_code: 302, error_kind: 'redirect' });
  expect(r!.response_headers).toMatchObject({ location: `${target.url}/elsewhere`, 'x-request-id': 'req-42' });
  const [b] = await h.attempts(d2.deliveryId);
  expect(b!.response_body).toHaveLength(4096);
});

test('two copies of the same job send once; a delivered delivery is never claimed again', async () => {
  const rx = await receiver(() => ({ status: 200, delayMs: 100 }));
  const dst = await h.destination(rx.url);
  const { deliveryId } = await h.delivery(dst.id);
  const second = h.replica();
  const [a, b] = await Promise.all([h.run([deliveryId]), h.run([deliveryId], second.deps)]);
  expect(a.claimed + b.claimed).toBe(1);
  expect(await h.run([deliveryId])).toMatchObject({ claimed: 0 });
  await h.enqueue([deliveryId]);
  await h.enqueue([deliveryId]);
  await new Promise((r) => setTimeout(r, 300));
  expect(rx.requests).toHaveLength(1);
  expect(await h.attempts(deliveryId)).toHaveLength(1);
});

test('fan-out: the event is failed while one delivery waits for a retry, delivered when all are', async () => {
  const ok = await receiver();
  const flaky = await receiver((n) => ({ status: n === 1 ? 500 : 200 }));
  const dOk = await h.destination(ok.url);
  const dFlaky = await h.destination(flaky.url, { config: { retry_schedule_ms: [600] } });
  const first = await h.delivery(dOk.id);
  const flowId = (await h.db.pool.query('SELECT flow_id FROM deliveries WHERE id = $1', [first.deliveryId])).rows[0].flow_id;
  // A sibling id: the same id with its last character changed (never equal to the first).
  const second = first.deliveryId.slice(0, -1) + (first.deliveryId.endsWith('z') ? 'y' : 'z');
  await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id) VALUES ($1, $2, $3, $4 || 'b', $5)`, [second, h.tenantId, first.eventId, flowId, dFlaky.id]);
  await h.run([first.deliveryId, second]);
  expect((await h.event(first.eventId)).status).toBe('failed');
  await h.enqueue([second]);
  await delivered(second);
  expect((await h.event(first.eventId)).status).toBe('delivered');
});

test('deliveries of cluster destinations and of disabled destinations are not claimed', async () => {
  const rx = await receiver();
  const viaEdge = await h.destination(rx.url, { clusterId: 'cls_edge' });
  const disabled = await h.destination(rx.url);
  await h.db.pool.query(`UPDATE destinations SET state = 'DISABLED' WHERE id = $1`, [disabled.id]);
  const d1 = await h.delivery(viaEdge.id);
  const d2 = await h.delivery(disabled.id);
  expect(await h.run([d1.deliveryId, d2.deliveryId])).toMatchObject({ claimed: 0 });
  expect(rx.requests).toHaveLength(0);
  expect((await h.row(d1.deliveryId)).status).toBe('pending');
});

test('a destination whose signing secret cannot be opened (wrong SECRETS_KEY) gets nothing unsigned: a failed attempt, retried, then the DLQ', async () => {
  const rx = await receiver();
  const foreign = createSecretBox('not the deliverer SECRETS_KEY at all');
  const dst = await h.destination(rx.url, { config: { max_attempts: 2, retry_schedule_ms: [20] } });
  const both = await h.destination(rx.url, { config: { max_attempts: 1 } });
  // The first: its only secret sealed with another key. The second: a rotation whose older secret does not open.
  await h.db.pool.query('UPDATE destinations SET secrets = $2 WHERE id = $1', [dst.id, [foreign.seal(newWhsecSecret())]]);
  await h.db.pool.query('UPDATE destinations SET secrets = secrets || $2::text[] WHERE id = $1', [both.id, [foreign.seal(newWhsecSecret())]]);
  const d1 = await h.delivery(dst.id);
  const d2 = await h.delivery(both.id);
  expect(await h.run([d1.deliveryId, d2.deliveryId])).toMatchObject({ claimed: 2, delivered: 0, failed: 1, exhausted: 1 });
  expect(rx.requests).toHaveLength(0);
  expect(await h.attempts(d1.deliveryId)).toMatchObject([{ number: 1, status_code: null, error_kind: 'signing_unavailable', error: expect.stringContaining('SECRETS_KEY') }]);
  expect((await h.row(d1.deliveryId)).status).toBe('failed');
  await h.enqueue([d1.deliveryId]);
  expect((await exhausted(d1.deliveryId)).attempt_count).toBe(2);
  expect((await h.attempts(d2.deliveryId))[0]).toMatchObject({ error_kind: 'signing_unavailable' });
  expect(rx.requests).toHaveLength(0);
  // Our own refusal says nothing about the destination: its circuit keeps no failure.
  expect(await h.redis.hget(destinationHealthKey(h.prefix, dst.id), 'failures')).toBeNull();
});

test('signatures are stamped when a request leaves, not before it waits for a concurrency slot', async () => {
  // One request at a time, the first held 2 s: the second waits for it. Stamped before that
  // wait, a backlog behind a slow destination went out with timestamps older than the
  // receiver's tolerance (Standard Webhooks: 5 min) and was refused.
  const rx = await receiver((n) => ({ status: 200, delayMs: n === 1 ? 2000 : 0 }));
  const dst = await h.destination(rx.url, { config: { max_concurrency: 1 } });
  const a = await h.delivery(dst.id);
  const b = await h.delivery(dst.id);
  expect(await h.run([a.deliveryId, b.deliveryId])).toMatchObject({ claimed: 2, delivered: 2 });
  const [first, second] = rx.requests as [ReceivedRequest, ReceivedRequest];
  // The second left after the first was answered, at least 2 s after the first arrived.
  const stamp = Number(second.headers['webhook-timestamp']);
  expect(stamp).toBeGreaterThanOrEqual(Math.floor((first.at + 2000) / 1000));
  expect(second.headers['x-service-timestamp']).toBe(String(stamp));
  expect(second.headers['x-service-signature']).toMatch(new RegExp(`^t=${stamp},v1=[0-9a-f]{64}$`));
  const sw = { 'webhook-id': String(second.headers['webhook-id']), 'webhook-timestamp': String(stamp), 'webhook-signature': String(second.headers['webhook-signature']) };
  expect(new Webhook(dst.secrets[0]!).verify(second.body, sw)).toEqual({ data: { amount: 100 } });
  const sig = verifyServiceSignature([whsecKey(dst.secrets[0]!)], second.body, String(second.headers['x-service-signature']), String(second.headers['x-service-timestamp']), 300);
  expect(sig).toEqual({ ok: true });
});
