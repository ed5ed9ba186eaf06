// A signed generic request is deduplicated on what its signature covers (t and the body), as
// Stripe's are on their signed event id: a captured request resent within the tolerance window
// gets the original answer (Idempotent-Replayed), with or without a fresh Idempotency-Key,
// which the signature does not cover. The dedup record outlives the window in which the
// signature is accepted (the tolerance is cut to what DEDUP_WINDOW_SECONDS covers).
import { createHash, randomUUID } from 'node:crypto';
import { startIngestHarness, type HookResponse, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { signAs } from '../services/ingest/src/testing/sign-request';
import { toleranceCap } from '../services/ingest/src/ingest-event';

const SECRET = 'gen-secret-1';
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const now = (): number => Math.floor(Date.now() / 1000);

/** The original answer, byte for byte, marked Idempotent-Replayed (a first answer never is). */
function expectReplayOf(again: HookResponse, first: HookResponse): void {
  expect(first).toMatchObject({ status: 202, json: { event_id: expect.stringMatching(/^evt_/), status: 'accepted' } });
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  expect({ status: again.status, json: again.json, replayed: again.headers.get('idempotent-replayed') }).toEqual({ status: 202, json: first.json, replayed: 'true' });
}

describe('replays within the tolerance window', () => {
  let h: IngestHarness;
  beforeAll(async () => {
    h = await startIngestHarness({ label: 'ingreplay' });
  });
  afterAll(() => h.close());

  const events = async (ingesterId: string): Promise<{ id: string; body: string }[]> =>
    (await h.db.pool.query(`SELECT e.id, convert_from(p.body, 'UTF8') AS body FROM events e JOIN event_payloads p ON p.event_id = e.id WHERE e.ingester_id = $1 ORDER BY e.id`, [ingesterId])).rows;

  test('the same signed request twice → the original answer (same event_id, Idempotent-Replayed) as for Stripe, one event', async () => {
    const generic = await h.seedIngester({ provider: 'generic', secrets: [SECRET] });
    const stripe = await h.seedIngester({ provider: 'stripe', secrets: ['whsec_st'] });
    const body = '{"type":"order.paid","n":1}';
    const stripeBody = `{"id":"evt_${randomUUID()}","type":"order.paid"}`;
    const genericHeaders = signAs('generic', SECRET, body);
    const stripeHeaders = signAs('stripe', 'whsec_st', stripeBody);

    const first = await h.post(generic.ingesterId, body, genericHeaders);
    const again = await h.post(generic.ingesterId, body, genericHeaders);
    expectReplayOf(again, first);
    const stripeFirst = await h.post(stripe.ingesterId, stripeBody, stripeHeaders);
    expectReplayOf(await h.post(stripe.ingesterId, stripeBody, stripeHeaders), stripeFirst);
    // The same headers either way.
    expect([...again.headers.keys()].sort()).toEqual([...(await h.post(stripe.ingesterId, stripeBody, stripeHeaders)).headers.keys()].sort());

    expect(await events(generic.ingesterId)).toEqual([{ id: first.json['event_id'], body }]);
    // Routed once.
    expect((await h.routedEventIds()).filter((id) => id === first.json['event_id'])).toHaveLength(1);
  });

  test('a replay with a fresh unsigned Idempotency-Key (or another v1 entry) is still the original; a new signature is a new event', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'generic', secrets: [SECRET] });
    const body = '{"type":"order.paid","n":2}';
    const t = now();
    const signed = signAs('generic', SECRET, body, { t });
    const first = await h.post(ingesterId, body, signed);
    for (const key of ['attacker-1', randomUUID(), 'attacker-2']) expectReplayOf(await h.post(ingesterId, body, { ...signed, 'idempotency-key': key }), first);
    // The v1 list is not part of the id: an extra entry does not make the request new.
    expectReplayOf(await h.post(ingesterId, body, { ...signed, 'X-Service-Signature': `${signed['X-Service-Signature']},v1=${'0'.repeat(64)}` }), first);
    expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], body }]);

    // The sender's own new request (signed afresh) is a new event, as before.
    const fresh = await h.post(ingesterId, body, signAs('generic', SECRET, body, { t: t - 1 }));
    expect(fresh.status).toBe(202);
    expect(fresh.json['event_id']).not.toBe(first.json['event_id']);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
  });

  test('a first request with an Idempotency-Key: its replay under another key is the original, its re-signed retry under the same key too, that key with another body a 409', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'generic', secrets: [SECRET] });
    const key = randomUUID();
    const body = '{"type":"order.paid","n":3}';
    const t = now();
    const first = await h.post(ingesterId, body, { ...signAs('generic', SECRET, body, { t: t - 20 }), 'idempotency-key': key });
    // The captured request, another key: the signed id holds it.
    expectReplayOf(await h.post(ingesterId, body, { ...signAs('generic', SECRET, body, { t: t - 20 }), 'idempotency-key': randomUUID() }), first);
    // The sender's retry, signed afresh under its key: the key holds it.
    expectReplayOf(await h.post(ingesterId, body, { ...signAs('generic', SECRET, body, { t }), 'idempotency-key': key }), first);
    const other = '{"type":"order.paid","n":4}';
    expect(await h.post(ingesterId, other, { ...signAs('generic', SECRET, other, { t }), 'idempotency-key': key })).toMatchObject({ status: 409, json: { idempotency_key: key } });
    expect(await events(ingesterId)).toEqual([{ id: first.json['event_id'], body }]);
    const { rows } = await h.db.pool.query('SELECT key FROM idempotency_records WHERE scope = $1 ORDER BY key', [`ingest:${ingesterId}`]);
    expect(rows.map((r) => r.key)).toEqual([key, `sig:${t - 20}:${sha256(body)}`].sort());
  });
});

describe('the dedup record outlives the tolerance window', () => {
  // A tiny window, so that a record expires within the test: the tolerance is cut to fit it.
  let h: IngestHarness;
  beforeAll(async () => {
    h = await startIngestHarness({ label: 'ingreplaywin', env: { DEDUP_WINDOW_SECONDS: '2', SIGNATURE_TOLERANCE_SECONDS: '300' } });
  });
  afterAll(() => h.close());

  test('toleranceCap: twice the tolerance, a second and a minute of clock margin fit in the window', () => {
    expect(toleranceCap(86400)).toBe(43169);
    expect(2 * toleranceCap(86400) + 1 + 60).toBeLessThanOrEqual(86400);
    expect(toleranceCap(2)).toBe(1);
  });

  test('a replay after the record expired is out of tolerance (401), never a new event', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'generic', secrets: [SECRET], config: { tolerance_seconds: 300 } });
    const body = '{"type":"order.paid","n":5}';
    const signed = signAs('generic', SECRET, body, { t: now() });
    const first = await h.post(ingesterId, body, signed);
    expect(first.status).toBe(202);
    expectReplayOf(await h.post(ingesterId, body, signed), first);
    await new Promise((r) => setTimeout(r, 2300));
    const late = await h.post(ingesterId, body, signed);
    expect(late.json).toMatchObject({ status: 401, reason_code: 'provider_verification_failed', reason: 'timestamp_out_of_tolerance' });
    const { rows } = await h.db.pool.query('SELECT id FROM events WHERE ingester_id = $1', [ingesterId]);
    expect(rows).toEqual([{ id: first.json['event_id'] }]);
  });
});
