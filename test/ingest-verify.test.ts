import { randomBytes } from 'node:crypto';
import type { Provider } from '@hookline/signing';
import { startIngestHarness, TEST_PUBLIC_URL, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { signAs, SIGNATURE_HEADER } from '../services/ingest/src/testing/sign-request';

let h: IngestHarness;

beforeAll(async () => {
  // Loopback is a trusted proxy here, so X-Forwarded-For can stand for other clients
  // without sending any traffic off this machine.
  h = await startIngestHarness({ label: 'ingver', env: { TRUSTED_PROXIES: '127.0.0.1/32' } });
});
afterAll(() => h.close());

const count = async (table: 'events' | 'ingest_rejections', ingesterId: string): Promise<number> =>
  (await h.db.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE ingester_id = $1`, [ingesterId])).rows[0].n;

const whsec = (): string => `whsec_${randomBytes(24).toString('base64')}`;

const PROVIDERS: { provider: Provider; body: string; contentType: string; headers: Record<string, string>; type: string }[] = [
  { provider: 'stripe', body: '{"id":"evt_s1","type":"invoice.paid"}', contentType: 'application/json', headers: {}, type: 'invoice.paid' },
  { provider: 'github', body: '{"action":"opened"}', contentType: 'application/json', headers: { 'X-GitHub-Event': 'issues' }, type: 'issues' },
  { provider: 'shopify', body: '{"id":1}', contentType: 'application/json', headers: { 'X-Shopify-Topic': 'orders/create' }, type: 'orders/create' },
  { provider: 'twilio', body: 'MessageSid=SM1&MessageStatus=delivered&To=%2B15551234567', contentType: 'application/x-www-form-urlencoded', headers: {}, type: 'delivered' },
  { provider: 'standard-webhooks', body: '{"type":"user.created"}', contentType: 'application/json', headers: {}, type: 'user.created' },
  { provider: 'generic', body: '{"type":"thing.done"}', contentType: 'application/json', headers: {}, type: 'thing.done' },
];

describe.each(PROVIDERS)('$provider through HTTP', (p) => {
  let ingesterId: string;
  const secrets = p.provider === 'standard-webhooks' ? [whsec(), whsec()] : [`old-${p.provider}`, `new-${p.provider}`];
  const path = (): string => `${ingesterId}/hook?src=test`;
  const sign = (secret: string, body = p.body, t?: number): Record<string, string> =>
    signAs(p.provider, secret, body, { url: `${TEST_PUBLIC_URL}/in/${path()}`, t, id: `msg_${randomBytes(6).toString('hex')}` });
  const post = (headers: Record<string, string>, body = p.body) => h.post(path(), body, { 'content-type': p.contentType, ...p.headers, ...headers });

  beforeAll(async () => {
    // Twilio signs the URL it was given: the suffix must be configured (twilio_url_suffixes).
    ({ ingesterId } = await h.seedIngester({ provider: p.provider, secrets, config: p.provider === 'twilio' ? { twilio_url_suffixes: ['/hook?src=test'] } : {} }));
  });

  test('signed with the second (rotated-in) secret → 202 with the provider event type', async () => {
    const res = await post(sign(secrets[1]!));
    expect(res.status).toBe(202);
    const { rows } = await h.db.pool.query('SELECT type FROM events WHERE id = $1', [res.json['event_id']]);
    expect(rows[0].type).toBe(p.type);
  });

  test('a tampered body → 401 provider_verification_failed, one rejection row, no event, nothing routed', async () => {
    const before = await count('events', ingesterId);
    const routedBefore = (await h.routedEventIds()).length;
    const res = await post(sign(secrets[0]!), p.body.replace(/.$/, p.body.endsWith('}') ? ' }' : 'x'));
    expect(res.status).toBe(401);
    expect(res.json).toMatchObject({ status: 401, reason_code: 'provider_verification_failed', reason: 'signature_mismatch', instance: res.headers.get('x-request-id') });
    const { rows } = await h.db.pool.query('SELECT id, reason_code, detail, source_ip FROM ingest_rejections WHERE ingester_id = $1 ORDER BY id DESC LIMIT 1', [ingesterId]);
    expect(rows[0]).toMatchObject({ id: expect.stringMatching(/^rej_/), reason_code: 'provider_verification_failed', detail: 'signature_mismatch', source_ip: '127.0.0.1' });
    expect(await count('events', ingesterId)).toBe(before);
    expect((await h.routedEventIds()).length).toBe(routedBefore);
  });

  test('a wrong secret and a missing header are rejected with their reasons', async () => {
    const wrong = await post(sign(p.provider === 'standard-webhooks' ? whsec() : 'not-the-secret'));
    expect(wrong.json).toMatchObject({ status: 401, reason: 'signature_mismatch' });
    const { [SIGNATURE_HEADER[p.provider]]: _gone, ...unsigned } = sign(secrets[0]!);
    const missing = await post(unsigned);
    expect(missing.json).toMatchObject({ status: 401, reason: 'missing_header' });
    const { rows } = await h.db.pool.query('SELECT detail FROM ingest_rejections WHERE ingester_id = $1 ORDER BY id DESC LIMIT 2', [ingesterId]);
    expect(rows.map((r) => r.detail)).toEqual(['missing_header', 'signature_mismatch']);
  });
});

test.each(['stripe', 'standard-webhooks', 'generic'] as const)('%s: a stale timestamp → 401 timestamp_out_of_tolerance (tolerance per ingester)', async (provider) => {
  const secret = provider === 'standard-webhooks' ? whsec() : 'stale-secret';
  const { ingesterId } = await h.seedIngester({ provider, secrets: [secret], config: { tolerance_seconds: 60 } });
  const body = '{"id":"evt_stale","type":"x"}';
  const res = await h.post(ingesterId, body, signAs(provider, secret, body, { t: Math.floor(Date.now() / 1000) - 120 }));
  expect(res.json).toMatchObject({ status: 401, reason_code: 'provider_verification_failed', reason: 'timestamp_out_of_tolerance' });
  expect(await count('events', ingesterId)).toBe(0);
});

describe('standard-webhooks secrets stored before the API checked them', () => {
  // '!!!!!!!!!!!!!!!!' decodes to an empty key: anyone can compute an HMAC with it.
  const weak = '!!!!!!!!!!!!!!!!';
  const forged = (body: string): Record<string, string> => signAs('standard-webhooks', weak, body, { id: `msg_${randomBytes(6).toString('hex')}` });

  test('a secret decoding to an empty key never verifies (401 signature_mismatch, a rejection, no event); a rotated-in valid one does; one warning naming the ingester', async () => {
    const warn = jest.spyOn(h.logger, 'warn');
    try {
      const good = whsec();
      const { ingesterId } = await h.seedIngester({ provider: 'standard-webhooks', secrets: [weak, good] });
      const body = '{"type":"forged"}';
      for (let i = 0; i < 2; i++) {
        const res = await h.post(ingesterId, body, forged(body));
        expect(res.json).toMatchObject({ status: 401, reason_code: 'provider_verification_failed', reason: 'signature_mismatch' });
      }
      expect(await count('events', ingesterId)).toBe(0);
      const { rows } = await h.db.pool.query('SELECT detail FROM ingest_rejections WHERE ingester_id = $1', [ingesterId]);
      expect(rows).toEqual([{ detail: 'signature_mismatch' }, { detail: 'signature_mismatch' }]);
      const ok = await h.post(ingesterId, '{"type":"user.created"}', signAs('standard-webhooks', good, '{"type":"user.created"}', { id: 'msg_good' }));
      expect(ok.status).toBe(202);
      const warnings = warn.mock.calls.map((c) => (c as unknown[])[1] as Record<string, unknown>).filter((m) => m?.['ingester_id'] === ingesterId);
      expect(warnings).toEqual([expect.objectContaining({ ingester_id: ingesterId, secret_positions: [0] })]);
      expect(JSON.stringify(warn.mock.calls)).not.toContain(weak);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('header rules', () => {
  test('missing or wrong required headers → 400 with a field per header and a validation_error rejection', async () => {
    const { ingesterId } = await h.seedIngester({ config: { required_headers: { 'X-Source-Token': 'abc', 'x-present': null } } });
    const bad = await h.post(ingesterId, '{}', { 'x-source-token': 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({
      type: expect.stringMatching(/\/validation-error$/),
    });
    // jsonb keeps its own key order, so the rules come back in any order.
    expect(bad.json['errors']).toHaveLength(2);
    expect(bad.json['errors']).toEqual(
      expect.arrayContaining([
        { field: 'headers.x-source-token', message: 'does not have the required value' },
        { field: 'headers.x-present', message: 'is required' },
      ]),
    );
    expect(JSON.stringify(bad.json)).not.toContain('abc');
    const { rows } = await h.db.pool.query('SELECT reason_code FROM ingest_rejections WHERE ingester_id = $1', [ingesterId]);
    expect(rows).toEqual([{ reason_code: 'validation_error' }]);
    expect((await h.post(ingesterId, '{}', { 'x-source-token': 'abc', 'x-present': '' })).status).toBe(202);
  });
});

describe('IP allowlist', () => {
  test('pro plan, 127.0.0.1/32 listed → loopback allowed', async () => {
    const { ingesterId } = await h.seedIngester({ plan: 'pro', config: { ip_allowlist: ['127.0.0.1/32', '2001:db8::/32'] } });
    expect((await h.post(ingesterId, '{}')).status).toBe(202);
  });

  test('pro plan, only 10.0.0.0/8 listed → loopback denied with 403 and a forbidden rejection', async () => {
    const { ingesterId } = await h.seedIngester({ plan: 'business', config: { ip_allowlist: ['10.0.0.0/8'] } });
    const res = await h.post(ingesterId, '{}');
    expect(res.status).toBe(403);
    expect(res.json).toMatchObject({ type: expect.stringMatching(/\/permission-denied$/), resource_id: ingesterId });
    const { rows } = await h.db.pool.query('SELECT reason_code, source_ip FROM ingest_rejections WHERE ingester_id = $1', [ingesterId]);
    expect(rows).toEqual([{ reason_code: 'forbidden', source_ip: '127.0.0.1' }]);
    expect(await count('events', ingesterId)).toBe(0);
  });

  test('free plan (a stored allowlist after a downgrade): still enforced, never fails open', async () => {
    const { ingesterId } = await h.seedIngester({ plan: 'free', config: { ip_allowlist: ['10.0.0.0/8'] } });
    expect((await h.post(ingesterId, '{}')).status).toBe(403);
    expect((await h.post(ingesterId, '{}', { 'x-forwarded-for': '10.1.2.3' })).status).toBe(202);
  });

  test('entries ingest cannot parse (stored before the API checked them) match nothing; the rest still apply', async () => {
    const { ingesterId } = await h.seedIngester({ plan: 'pro', config: { ip_allowlist: ['10.0.0.1/33', '192.0.2.0/24'] } });
    expect((await h.post(ingesterId, '{}', { 'x-forwarded-for': '192.0.2.9' })).status).toBe(202);
    expect((await h.post(ingesterId, '{}', { 'x-forwarded-for': '10.0.0.1' })).status).toBe(403);
  });

  test('behind a trusted proxy the right-most untrusted X-Forwarded-For hop is the client', async () => {
    const { ingesterId } = await h.seedIngester({ plan: 'enterprise', config: { ip_allowlist: ['10.0.0.0/8'] } });
    const allowed = await h.post(ingesterId, '{}', { 'x-forwarded-for': '192.0.2.7, 10.1.2.3' });
    expect(allowed.status).toBe(202);
    const { rows } = await h.db.pool.query('SELECT source_ip FROM events WHERE id = $1', [allowed.json['event_id']]);
    expect(rows[0].source_ip).toBe('10.1.2.3');
    // The client cannot smuggle an allowed address to the left of its own.
    expect((await h.post(ingesterId, '{}', { 'x-forwarded-for': '10.1.2.3, 192.0.2.7' })).status).toBe(403);
  });
});
