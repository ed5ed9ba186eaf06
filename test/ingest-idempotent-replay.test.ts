// SPEC.md Limits: "the same key returns the original result". A repeat of a live dedup key
// on an ingester (an explicit Idempotency-Key, or a provider's delivery id) is answered
// exactly as the first request was — 202 {event_id, status: "accepted"}, the same bytes —
// plus `Idempotent-Replayed: true` (as Stripe and the control API mark a replay). Refusals
// are never marked. Ingest in-process on loopback, real PostgreSQL and Redis.
import { randomUUID } from 'node:crypto';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { signAs } from '../services/ingest/src/testing/sign-request';

let h: IngestHarness;
beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingreplay' });
});
afterAll(() => h.close());

interface Raw {
  status: number;
  headers: Headers;
  text: string;
}

const post = async (ingesterId: string, body: string, headers: Record<string, string>): Promise<Raw> => {
  const res = await fetch(`${h.url}/in/${ingesterId}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, headers: res.headers, text: await res.text() };
};

/** The answer as a client sees it, less what differs per request by design (its request id). */
const seen = (r: Raw): Record<string, unknown> => ({ status: r.status, contentType: r.headers.get('content-type'), body: r.text, replayed: r.headers.get('idempotent-replayed') });

const ingested = async (outcome: string): Promise<number> => {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('hookline_events_ingested_total{') && l.includes(`outcome="${outcome}"`) && l.includes('provider="generic"'));
  return line ? Number(line.split(' ').pop()) : 0;
};

const eventIds = async (ingesterId: string): Promise<string[]> => (await h.db.pool.query('SELECT id FROM events WHERE ingester_id = $1 ORDER BY id', [ingesterId])).rows.map((r) => r.id as string);

test('a repeated Idempotency-Key gets the first acknowledgement byte for byte (202), marked Idempotent-Replayed, with its own request id; a refusal or a new event is never marked', async () => {
  const { ingesterId } = await h.seedIngester();
  const key = randomUUID();
  const body = '{"type":"order.paid","n":1}';
  const duplicatesBefore = await ingested('duplicate');

  const first = await post(ingesterId, body, { 'idempotency-key': key, 'x-request-id': 'req-first' });
  expect(seen(first)).toEqual({ status: 202, contentType: 'application/json', body: expect.any(String), replayed: null });
  const eventId = (JSON.parse(first.text) as { event_id: string }).event_id;
  expect(JSON.parse(first.text)).toEqual({ event_id: eventId, status: 'accepted' });

  for (const reqId of ['req-again-1', 'req-again-2']) {
    const again = await post(ingesterId, body, { 'idempotency-key': key, 'x-request-id': reqId });
    expect(seen(again)).toEqual({ ...seen(first), replayed: 'true' });
    expect(again.headers.get('x-request-id')).toBe(reqId);
  }
  expect(await eventIds(ingesterId)).toEqual([eventId]);
  // Operators still tell replays apart: they count as outcome="duplicate", not "accepted".
  expect((await ingested('duplicate')) - duplicatesBefore).toBe(2);

  // Another body under the key: still the 409 problem, not marked.
  const conflict = await post(ingesterId, '{"type":"order.paid","n":2}', { 'idempotency-key': key });
  expect(conflict.status).toBe(409);
  expect(conflict.headers.get('idempotent-replayed')).toBeNull();
  // The same body without a key (a generic source has no delivery id): a new event, not marked.
  const fresh = await post(ingesterId, body, {});
  expect(seen(fresh)).toMatchObject({ status: 202, replayed: null });
  expect(JSON.parse(fresh.text).event_id).not.toBe(eventId);
});

test('a provider redelivery (X-GitHub-Delivery) gets the first acknowledgement byte for byte (202), marked Idempotent-Replayed, whatever its body', async () => {
  const { ingesterId } = await h.seedIngester({ provider: 'github', secrets: ['gh-secret'] });
  const delivery = randomUUID();
  const send = (body: string): Promise<Raw> => post(ingesterId, body, { 'X-GitHub-Delivery': delivery, 'X-GitHub-Event': 'push', ...signAs('github', 'gh-secret', body) });
  const first = await send('{"ref":"refs/heads/main"}');
  expect(seen(first)).toMatchObject({ status: 202, replayed: null });
  expect(seen(await send('{"ref":"refs/heads/main"}'))).toEqual({ ...seen(first), replayed: 'true' });
  // A provider cannot act on a 409: the same delivery id with another body is the same delivery.
  expect(seen(await send('{"ref":"refs/heads/other"}'))).toEqual({ ...seen(first), replayed: 'true' });
  expect(await eventIds(ingesterId)).toEqual([JSON.parse(first.text).event_id]);
});
