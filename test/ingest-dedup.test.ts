import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { newId } from '@hookline/db';
import type { Provider } from '@hookline/signing';
import { startIngestHarness, TEST_PUBLIC_URL, type HookResponse, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { signAs } from '../services/ingest/src/testing/sign-request';
import { writeBatch, type PendingEvent } from '../services/ingest/src/write-batch';

let h: IngestHarness;

beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingdedup' });
});
afterAll(() => h.close());

/** A repeat of a live key gets the original result: the first answer's status and body, marked Idempotent-Replayed. */
const expectReplayOf = (again: HookResponse, first: HookResponse): void => {
  expect(first).toMatchObject({ status: 202, json: { event_id: expect.stringMatching(/^evt_/), status: 'accepted' } });
  expect({ status: again.status, json: again.json, replayed: again.headers.get('idempotent-replayed') }).toEqual({ status: first.status, json: first.json, replayed: 'true' });
};

const events = async (ingesterId: string): Promise<{ id: string; dedup_key: string | null }[]> =>
  (await h.db.pool.query('SELECT id, dedup_key FROM events WHERE ingester_id = $1 ORDER BY id', [ingesterId])).rows;

test('Idempotency-Key: the repeat answers the original 202 (Idempotent-Replayed) and creates nothing', async () => {
  const { ingesterId } = await h.seedIngester();
  const key = randomUUID();
  const first = await h.post(ingesterId, '{"n":1}', { 'idempotency-key': key });
  expect(first.status).toBe(202);
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  const again = await h.post(ingesterId, '{"n":1}', { 'idempotency-key': key });
  expectReplayOf(again, first);
  expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: key }]);
  // The duplicate was not routed a second time.
  expect((await h.routedEventIds()).filter((id) => id === first.json['event_id'])).toHaveLength(1);
});

test('the same key on another ingester is another event (keys are scoped per ingester)', async () => {
  const a = await h.seedIngester();
  const b = await h.seedIngester();
  const key = randomUUID();
  expect((await h.post(a.ingesterId, '{}', { 'idempotency-key': key })).status).toBe(202);
  expect((await h.post(b.ingesterId, '{}', { 'idempotency-key': key })).status).toBe(202);
});

test('concurrent duplicates: every answer the same 202 with one id, all but one Idempotent-Replayed, one event', async () => {
  const { ingesterId } = await h.seedIngester();
  const key = randomUUID();
  const results = await Promise.all(Array.from({ length: 8 }, () => h.post(ingesterId, '{}', { 'idempotency-key': key })));
  const original = results.filter((r) => r.headers.get('idempotent-replayed') === null);
  expect(original).toHaveLength(1);
  expect(original[0]!.status).toBe(202);
  for (const r of results.filter((x) => x !== original[0])) expectReplayOf(r, original[0]!);
  expect(await events(ingesterId)).toEqual([{ id: original[0]!.json['event_id'], dedup_key: key }]);
});

test('an expired record does not dedupe: a new event is stored and takes the key over', async () => {
  const { ingesterId, tenantId } = await h.seedIngester();
  const key = randomUUID();
  await h.db.pool.query(
    `INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at) VALUES ($1, $2, $3, 'x', 202, '{"event_id":"evt_old"}', now() - interval '1 second')`,
    [`ingest:${ingesterId}`, key, tenantId],
  );
  const res = await h.post(ingesterId, '{}', { 'idempotency-key': key });
  expect(res.status).toBe(202);
  expect(res.json['event_id']).not.toBe('evt_old');
  const { rows } = await h.db.pool.query('SELECT response_body, expires_at > now() AS live FROM idempotency_records WHERE scope = $1 AND key = $2', [`ingest:${ingesterId}`, key]);
  expect(rows[0]).toEqual({ response_body: { event_id: res.json['event_id'] }, live: true });
  expectReplayOf(await h.post(ingesterId, '{}', { 'idempotency-key': key }), res);
});

/** Everything a request could have written for this ingester, to show a refusal changed nothing. */
const snapshot = async (ingesterId: string): Promise<Record<string, unknown[]>> => {
  const q = async (sql: string): Promise<unknown[]> => (await h.db.pool.query(sql, [ingesterId])).rows;
  return {
    events: await q('SELECT id, dedup_key, status FROM events WHERE ingester_id = $1 ORDER BY id'),
    payloads: await q('SELECT p.event_id, p.body FROM event_payloads p JOIN events e ON e.id = p.event_id WHERE e.ingester_id = $1 ORDER BY p.event_id'),
    records: await q(`SELECT key, tenant_id, request_hash, status_code, response_body, created_at, expires_at FROM idempotency_records WHERE scope = 'ingest:' || $1 ORDER BY key`),
    rejections: await q('SELECT id FROM ingest_rejections WHERE ingester_id = $1'),
  };
};

describe('Idempotency-Key reused with a different body', () => {
  test('another body under the same Idempotency-Key → 409 idempotency-conflict problem details with the request id; nothing stored, the record untouched', async () => {
    const { ingesterId } = await h.seedIngester();
    const key = randomUUID();
    const first = await h.post(ingesterId, '{"amount":1}', { 'idempotency-key': key });
    expect(first.status).toBe(202);
    const routed = await h.routedEventIds();
    const before = await snapshot(ingesterId);
    expect(before['records']).toHaveLength(1);

    const reqId = `req-conflict-${randomUUID()}`;
    const res = await h.post(ingesterId, '{"amount":2}', { 'idempotency-key': key, 'x-request-id': reqId });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('x-request-id')).toBe(reqId);
    expect(res.json).toEqual({
      type: expect.stringMatching(/\/idempotency-conflict$/),
      title: 'Idempotency Conflict',
      status: 409,
      detail: expect.any(String),
      instance: reqId,
      idempotency_key: key,
    });
    // No event, no payload, no rejection row, the record as it was, nothing routed.
    expect(await snapshot(ingesterId)).toEqual(before);
    expect(await h.routedEventIds()).toEqual(routed);

    expect(res.headers.get('idempotent-replayed')).toBeNull();

    // The original body still answers with the original result.
    const again = await h.post(ingesterId, '{"amount":1}', { 'idempotency-key': key });
    expectReplayOf(again, first);
    expect(await snapshot(ingesterId)).toEqual(before);
  });

  test('the same body with other headers (a re-signed retry) is still a duplicate: only the body is compared', async () => {
    const { ingesterId } = await h.seedIngester({ secrets: ['gen-secret'] });
    const key = randomUUID();
    const body = '{"type":"order.paid"}';
    const t = Math.floor(Date.now() / 1000);
    const first = await h.post(ingesterId, body, { 'idempotency-key': key, ...signAs('generic', 'gen-secret', body, { t: t - 30 }) });
    expect(first.status).toBe(202);
    const again = await h.post(ingesterId, body, { 'idempotency-key': key, 'x-extra': 'retry', ...signAs('generic', 'gen-secret', body, { t }) });
    expectReplayOf(again, first);
    // The event's own key is its signed id (t and body hash); the Idempotency-Key is held beside it.
    expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: `sig:${t - 30}:${createHash('sha256').update(body).digest('hex')}` }]);
  });

  test('a long key (stored as its hash) conflicts too, and the problem names the key as sent', async () => {
    const { ingesterId } = await h.seedIngester();
    const key = `k-${'x'.repeat(300)}`;
    expect((await h.post(ingesterId, '{"a":1}', { 'idempotency-key': key })).status).toBe(202);
    const res = await h.post(ingesterId, '{"a":2}', { 'idempotency-key': key });
    expect(res).toMatchObject({ status: 409, json: { status: 409, idempotency_key: key } });
    expect(await events(ingesterId)).toHaveLength(1);
  });

  test('concurrent requests with one key and different bodies: one 202, every other one 409, one event', async () => {
    const { ingesterId } = await h.seedIngester();
    const key = randomUUID();
    const results = await Promise.all(Array.from({ length: 8 }, (_, n) => h.post(ingesterId, `{"n":${n}}`, { 'idempotency-key': key })));
    expect(results.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
    const winner = results.find((r) => r.status === 202)!;
    expect(await events(ingesterId)).toEqual([{ id: winner.json['event_id'], dedup_key: key }]);
  });

  test('an expired record is taken over by a different body (no conflict past DEDUP_WINDOW_SECONDS)', async () => {
    const { ingesterId, tenantId } = await h.seedIngester();
    const key = randomUUID();
    const staleHash = createHash('sha256').update('{"old":true}').digest('hex');
    await h.db.pool.query(
      `INSERT INTO idempotency_records (scope, key, tenant_id, request_hash, status_code, response_body, expires_at) VALUES ($1, $2, $3, $4, 202, '{"event_id":"evt_old"}', now() - interval '1 second')`,
      [`ingest:${ingesterId}`, key, tenantId, staleHash],
    );
    const res = await h.post(ingesterId, '{"new":true}', { 'idempotency-key': key });
    expect(res.status).toBe(202);
    const { rows } = await h.db.pool.query('SELECT request_hash, response_body FROM idempotency_records WHERE scope = $1 AND key = $2', [`ingest:${ingesterId}`, key]);
    expect(rows[0]).toEqual({ request_hash: createHash('sha256').update('{"new":true}').digest('hex'), response_body: { event_id: res.json['event_id'] } });
    // Now the new body holds the key: the old one conflicts.
    expect((await h.post(ingesterId, '{"old":true}', { 'idempotency-key': key })).status).toBe(409);
  });

  test('an Idempotency-Key equal to a provider delivery id already stored is held to that body when it is the key (no provider id on the request)', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'github', secrets: ['gh'] });
    const delivery = randomUUID();
    const send = (body: string, headers: Record<string, string>): ReturnType<IngestHarness['post']> => h.post(ingesterId, body, { ...headers, ...signAs('github', 'gh', body) });
    const first = await send('{"a":1}', { 'X-GitHub-Delivery': delivery });
    expect(first.status).toBe(202);
    const conflict = await send('{"a":2}', { 'Idempotency-Key': delivery });
    expect(conflict).toMatchObject({ status: 409, json: { idempotency_key: delivery } });
    expectReplayOf(await send('{"a":1}', { 'Idempotency-Key': delivery }), first);
    // With the provider id on the request the id is the key, whatever the header says: a
    // provider redelivery, the original 202 (never a 409 to a provider).
    expectReplayOf(await send('{"a":2}', { 'X-GitHub-Delivery': delivery, 'Idempotency-Key': delivery }), first);
    expectReplayOf(await send('{"a":2}', { 'X-GitHub-Delivery': delivery }), first);
    expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: delivery }]);
  });
});

const whsec = `whsec_${randomBytes(24).toString('base64')}`;
const stripeId = `evt_${randomUUID()}`;
// `other`: a different body carrying the same delivery id (for Stripe the id is in the body).
const KINDS: { provider: Provider; secret: string; body: string; other: string; contentType?: string; idHeaders: () => Record<string, string>; key: (body: string, headers: Record<string, string>) => string }[] = [
  { provider: 'stripe', secret: 'st', body: `{"id":"${stripeId}","type":"a"}`, other: `{"id":"${stripeId}","type":"a","livemode":true}`, idHeaders: () => ({}), key: (b) => (JSON.parse(b) as { id: string }).id },
  { provider: 'github', secret: 'gh', body: '{}', other: '{"zen":"x"}', idHeaders: () => ({ 'X-GitHub-Delivery': randomUUID() }), key: (_b, hd) => hd['X-GitHub-Delivery']! },
  { provider: 'shopify', secret: 'sh', body: '{}', other: '{"id":2}', idHeaders: () => ({ 'X-Shopify-Webhook-Id': randomUUID() }), key: (_b, hd) => hd['X-Shopify-Webhook-Id']! },
  { provider: 'standard-webhooks', secret: whsec, body: '{}', other: '{"type":"b"}', idHeaders: () => ({}), key: (_b, hd) => hd['webhook-id']! },
  { provider: 'twilio', secret: 'tw', body: 'A=1', other: 'A=2', contentType: 'application/x-www-form-urlencoded', idHeaders: () => ({ 'I-Twilio-Idempotency-Token': randomUUID() }), key: (_b, hd) => hd['I-Twilio-Idempotency-Token']! },
];

test.each(KINDS)('$provider: a redelivery with the same provider id → the original 202 (Idempotent-Replayed)', async (k) => {
  const { ingesterId } = await h.seedIngester({ provider: k.provider, secrets: [k.secret] });
  // The same delivery sent twice, as a provider retries it after a lost answer.
  const headers = { ...k.idHeaders(), ...signAs(k.provider, k.secret, k.body, { url: `${TEST_PUBLIC_URL}/in/${ingesterId}`, id: `msg_${randomUUID()}` }) };
  const send = (): ReturnType<IngestHarness['post']> => h.post(ingesterId, k.body, { ...headers, 'content-type': k.contentType ?? 'application/json' });
  const first = await send();
  expect(first.status).toBe(202);
  const again = await send();
  expectReplayOf(again, first);
  expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: k.key(k.body, headers) }]);
});

test.each(KINDS)('$provider: the same provider id with a different body → the original 202 (Idempotent-Replayed; never a 409 to a provider)', async (k) => {
  const { ingesterId } = await h.seedIngester({ provider: k.provider, secrets: [k.secret] });
  const ids = k.idHeaders();
  const msgId = `msg_${randomUUID()}`;
  const send = (body: string): ReturnType<IngestHarness['post']> =>
    h.post(ingesterId, body, { ...ids, ...signAs(k.provider, k.secret, body, { url: `${TEST_PUBLIC_URL}/in/${ingesterId}`, id: msgId }), 'content-type': k.contentType ?? 'application/json' });
  const first = await send(k.body);
  expect(first.status).toBe(202);
  const before = await snapshot(ingesterId);
  const other = await send(k.other);
  expectReplayOf(other, first);
  expect(await snapshot(ingesterId)).toEqual(before);
  expect(before['payloads']).toEqual([{ event_id: first.json['event_id'], body: Buffer.from(k.body) }]);
});

test.each(KINDS)('$provider: a captured request replayed with a fresh Idempotency-Key each time → the original 202 (Idempotent-Replayed), one event: the provider id is the key', async (k) => {
  const { ingesterId } = await h.seedIngester({ provider: k.provider, secrets: [k.secret] });
  const headers = { ...k.idHeaders(), ...signAs(k.provider, k.secret, k.body, { url: `${TEST_PUBLIC_URL}/in/${ingesterId}`, id: `msg_${randomUUID()}` }), 'content-type': k.contentType ?? 'application/json' };
  const first = await h.post(ingesterId, k.body, headers);
  expect(first.status).toBe(202);
  expectReplayOf(await h.post(ingesterId, k.body, headers), first);
  for (const key of ['anything-1', 'anything-2', randomUUID()]) expectReplayOf(await h.post(ingesterId, k.body, { ...headers, 'idempotency-key': key }), first);
  expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: k.key(k.body, headers) }]);
});

test('a first request carrying both an Idempotency-Key and a provider id is stored under the provider id: its plain redelivery is the replay', async () => {
  const { ingesterId } = await h.seedIngester({ provider: 'stripe', secrets: ['st'] });
  const body = `{"id":"evt_${randomUUID()}","type":"a"}`;
  const sig = signAs('stripe', 'st', body);
  const first = await h.post(ingesterId, body, { ...sig, 'idempotency-key': 'client-key' });
  expect(first.status).toBe(202);
  expectReplayOf(await h.post(ingesterId, body, sig), first);
  expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: (JSON.parse(body) as { id: string }).id }]);
});

describe('writeBatch (one transaction per batch)', () => {
  const pending = (ingesterId: string, tenantId: string, dedupKey: string | null, o: { body?: string; explicit?: boolean } = {}): PendingEvent => ({
    eventId: newId('evt'),
    tenantId,
    ingesterId,
    type: null,
    correlationId: randomBytes(16).toString('hex'),
    dedupKey,
    explicitKey: o.explicit ?? dedupKey !== null,
    sourceIp: null,
    receivedAt: new Date(),
    contentType: 'application/json',
    headers: { 'x-a': '1' },
    query: null,
    body: Buffer.from(o.body ?? '{}'),
  });

  test('two items with one key in the same batch are one event; keyless items are always new', async () => {
    const { ingesterId, tenantId } = await h.seedIngester();
    const batch = [pending(ingesterId, tenantId, 'k1'), pending(ingesterId, tenantId, null), pending(ingesterId, tenantId, 'k1'), pending(ingesterId, tenantId, 'k2')];
    const out = await writeBatch(h.db.pool, batch, 60);
    expect(out).toEqual([
      { kind: 'accepted', eventId: batch[0]!.eventId },
      { kind: 'accepted', eventId: batch[1]!.eventId },
      { kind: 'duplicate', eventId: batch[0]!.eventId },
      { kind: 'accepted', eventId: batch[3]!.eventId },
    ]);
    expect((await events(ingesterId)).map((e) => e.id).sort()).toEqual([batch[0]!.eventId, batch[1]!.eventId, batch[3]!.eventId].sort());
    // A later batch with a key already stored and a new one.
    const later = [pending(ingesterId, tenantId, 'k2'), pending(ingesterId, tenantId, 'k3')];
    expect(await writeBatch(h.db.pool, later, 60)).toEqual([
      { kind: 'duplicate', eventId: batch[3]!.eventId },
      { kind: 'accepted', eventId: later[1]!.eventId },
    ]);
  });

  test('one key twice in a batch: a later explicit key with another body is a conflict, with the same body a duplicate', async () => {
    const { ingesterId, tenantId } = await h.seedIngester();
    const batch = [
      pending(ingesterId, tenantId, 'k', { body: '{"v":1}' }),
      pending(ingesterId, tenantId, 'k', { body: '{"v":2}' }),
      pending(ingesterId, tenantId, 'k', { body: '{"v":1}' }),
      // The same key as a provider delivery id (no Idempotency-Key header): never a conflict.
      pending(ingesterId, tenantId, 'k', { body: '{"v":3}', explicit: false }),
    ];
    expect(await writeBatch(h.db.pool, batch, 60)).toEqual([
      { kind: 'accepted', eventId: batch[0]!.eventId },
      { kind: 'conflict' },
      { kind: 'duplicate', eventId: batch[0]!.eventId },
      { kind: 'duplicate', eventId: batch[0]!.eventId },
    ]);
    const before = await snapshot(ingesterId);
    expect(before['events']).toEqual([{ id: batch[0]!.eventId, dedup_key: 'k', status: 'validated' }]);
    expect(before['records']).toMatchObject([{ key: 'k', request_hash: createHash('sha256').update('{"v":1}').digest('hex') }]);
    // A later batch against the stored record (the ORIGINALS path): the first copy conflicts,
    // the copy after it with the stored body is a duplicate; nothing changes.
    const later = [pending(ingesterId, tenantId, 'k', { body: '{"v":2}' }), pending(ingesterId, tenantId, 'k', { body: '{"v":1}' }), pending(ingesterId, tenantId, 'k', { body: '{"v":2}', explicit: false })];
    expect(await writeBatch(h.db.pool, later, 60)).toEqual([
      { kind: 'conflict' },
      { kind: 'duplicate', eventId: batch[0]!.eventId },
      { kind: 'duplicate', eventId: batch[0]!.eventId },
    ]);
    expect(await snapshot(ingesterId)).toEqual(before);
  });

  test('a failing batch stores nothing at all (one transaction)', async () => {
    const { ingesterId, tenantId } = await h.seedIngester();
    const good = pending(ingesterId, tenantId, 'kx');
    const clash = { ...pending(ingesterId, tenantId, null), eventId: good.eventId };
    await expect(writeBatch(h.db.pool, [good, clash], 60)).rejects.toThrow();
    expect(await events(ingesterId)).toEqual([]);
    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM idempotency_records WHERE scope = $1', [`ingest:${ingesterId}`]);
    expect(rows[0].n).toBe(0);
  });
});
