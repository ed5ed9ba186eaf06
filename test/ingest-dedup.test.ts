import { randomBytes, randomUUID } from 'node:crypto';
import { newId } from '@hookline/db';
import type { Provider } from '@hookline/signing';
import { startIngestHarness, TEST_PUBLIC_URL, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { signAs } from '../services/ingest/src/testing/sign-request';
import { writeBatch, type PendingEvent } from '../services/ingest/src/write-batch';

let h: IngestHarness;

beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingdedup' });
});
afterAll(() => h.close());

const events = async (ingesterId: string): Promise<{ id: string; dedup_key: string | null }[]> =>
  (await h.db.pool.query('SELECT id, dedup_key FROM events WHERE ingester_id = $1 ORDER BY id', [ingesterId])).rows;

test('Idempotency-Key: the repeat answers 200 with the original id and creates nothing', async () => {
  const { ingesterId } = await h.seedIngester();
  const key = randomUUID();
  const first = await h.post(ingesterId, '{"n":1}', { 'idempotency-key': key });
  expect(first.status).toBe(202);
  const again = await h.post(ingesterId, '{"n":1}', { 'idempotency-key': key });
  expect(again.status).toBe(200);
  expect(again.json).toEqual({ event_id: first.json['event_id'], duplicate: true });
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

test('concurrent duplicates: exactly one 202, the rest 200 with the same id, one event', async () => {
  const { ingesterId } = await h.seedIngester();
  const key = randomUUID();
  const results = await Promise.all(Array.from({ length: 8 }, () => h.post(ingesterId, '{}', { 'idempotency-key': key })));
  const accepted = results.filter((r) => r.status === 202);
  expect(accepted).toHaveLength(1);
  const id = accepted[0]!.json['event_id'];
  for (const r of results.filter((x) => x.status !== 202)) expect(r).toMatchObject({ status: 200, json: { event_id: id, duplicate: true } });
  expect(await events(ingesterId)).toHaveLength(1);
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
  expect((await h.post(ingesterId, '{}', { 'idempotency-key': key })).json).toEqual({ event_id: res.json['event_id'], duplicate: true });
});

const whsec = `whsec_${randomBytes(24).toString('base64')}`;
const KINDS: { provider: Provider; secret: string; body: string; contentType?: string; idHeaders: () => Record<string, string>; key: (body: string, headers: Record<string, string>) => string }[] = [
  { provider: 'stripe', secret: 'st', body: `{"id":"evt_${randomUUID()}","type":"a"}`, idHeaders: () => ({}), key: (b) => (JSON.parse(b) as { id: string }).id },
  { provider: 'github', secret: 'gh', body: '{}', idHeaders: () => ({ 'X-GitHub-Delivery': randomUUID() }), key: (_b, hd) => hd['X-GitHub-Delivery']! },
  { provider: 'shopify', secret: 'sh', body: '{}', idHeaders: () => ({ 'X-Shopify-Webhook-Id': randomUUID() }), key: (_b, hd) => hd['X-Shopify-Webhook-Id']! },
  { provider: 'standard-webhooks', secret: whsec, body: '{}', idHeaders: () => ({}), key: (_b, hd) => hd['webhook-id']! },
  { provider: 'twilio', secret: 'tw', body: 'A=1', contentType: 'application/x-www-form-urlencoded', idHeaders: () => ({ 'I-Twilio-Idempotency-Token': randomUUID() }), key: (_b, hd) => hd['I-Twilio-Idempotency-Token']! },
];

test.each(KINDS)('$provider: a redelivery with the same provider id → 200 with the original id', async (k) => {
  const { ingesterId } = await h.seedIngester({ provider: k.provider, secrets: [k.secret] });
  // The same delivery sent twice, as a provider retries it after a lost answer.
  const headers = { ...k.idHeaders(), ...signAs(k.provider, k.secret, k.body, { url: `${TEST_PUBLIC_URL}/in/${ingesterId}`, id: `msg_${randomUUID()}` }) };
  const send = (): ReturnType<IngestHarness['post']> => h.post(ingesterId, k.body, { ...headers, 'content-type': k.contentType ?? 'application/json' });
  const first = await send();
  expect(first.status).toBe(202);
  const again = await send();
  expect(again).toMatchObject({ status: 200, json: { event_id: first.json['event_id'], duplicate: true } });
  expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], dedup_key: k.key(k.body, headers) }]);
});

describe('writeBatch (one transaction per batch)', () => {
  const pending = (ingesterId: string, tenantId: string, dedupKey: string | null): PendingEvent => ({
    eventId: newId('evt'),
    tenantId,
    ingesterId,
    type: null,
    correlationId: randomBytes(16).toString('hex'),
    dedupKey,
    sourceIp: null,
    receivedAt: new Date(),
    contentType: 'application/json',
    headers: { 'x-a': '1' },
    query: null,
    body: Buffer.from('{}'),
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
