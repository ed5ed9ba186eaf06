// Twilio signs the URL plus the form parameters, without separators; any other body is
// authenticated only by a bodySHA256 query parameter Twilio appends to the signed URL. Hook
// paths take any suffix, so a captured form callback's signature could be replayed with its
// parameters moved into the path or query: a Twilio ingester checks signatures only on the
// suffixes configured in twilio_url_suffixes (default: the bare hook URL), and only a
// trailing bodySHA256 parameter makes the URL alone the signed content.
import { createHash, createHmac } from 'node:crypto';
import { startIngestHarness, TEST_PUBLIC_URL, type HookResponse, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';

let h: IngestHarness;
beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingtwilio' });
});
afterAll(() => h.close());

const TOKEN = 'twilio-auth-token-123';
const sign = (s: string): string => createHmac('sha1', TOKEN).update(s).digest('base64');
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

const stored = async (ingesterId: string): Promise<{ type: string | null; body: string }[]> =>
  (await h.db.pool.query(`SELECT e.type, convert_from(p.body, 'UTF8') AS body FROM events e JOIN event_payloads p ON p.event_id = e.id WHERE e.ingester_id = $1 ORDER BY e.id`, [ingesterId])).rows;
const rejections = async (ingesterId: string): Promise<{ reason_code: string; detail: string }[]> =>
  (await h.db.pool.query('SELECT reason_code, detail FROM ingest_rejections WHERE ingester_id = $1 ORDER BY id', [ingesterId])).rows;

/** Refused as every signature failure is: 401 unauthorized problem details, provider_verification_failed. */
function expectSignatureRefusal(res: HookResponse): void {
  expect(res.status).toBe(401);
  expect(res.json).toMatchObject({
    type: expect.stringMatching(/\/unauthorized$/),
    title: 'Unauthorized',
    status: 401,
    reason_code: 'provider_verification_failed',
    reason: 'signature_mismatch',
    instance: res.headers.get('x-request-id'),
  });
}

test('the probe: a form callback signature replayed with its parameters in the path and a JSON body → 401, a rejection row, no event', async () => {
  const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN], config: { twilio_url_suffixes: ['/status'] } });
  const params: Record<string, string> = { AccountSid: 'AC123', MessageSid: 'SM456', MessageStatus: 'delivered', To: '+15551234567' };
  const concat = Object.keys(params).sort().map((k) => k + params[k]).join('');
  const sig = sign(`${TEST_PUBLIC_URL}/in/${ingesterId}/status${concat}`);
  const formBody = new URLSearchParams(params).toString();
  // The genuine callback (captured by the attacker) is accepted.
  const legit = await h.post(`${ingesterId}/status`, formBody, { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': sig });
  expect(legit.status).toBe(202);

  const forged = await h.post(`${ingesterId}/status${concat}`, JSON.stringify({ MessageStatus: 'failed', injected: true }), { 'content-type': 'application/json', 'x-twilio-signature': sig });
  expectSignatureRefusal(forged);
  // The same with an empty body (form or not): nothing but the URL would be signed.
  expectSignatureRefusal(await h.post(`${ingesterId}/status${concat}`, '', { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': sig }));
  expectSignatureRefusal(await h.post(`${ingesterId}/status${concat}`, '', { 'content-type': 'application/json', 'x-twilio-signature': sig }));

  expect(await stored(ingesterId)).toEqual([{ type: 'delivered', body: formBody }]);
  expect(await rejections(ingesterId)).toEqual(Array.from({ length: 3 }, () => ({ reason_code: 'provider_verification_failed', detail: 'signature_mismatch' })));
});

test('a JSON body is authenticated only through bodySHA256: accepted when it hashes to it (signed the Twilio way), refused when it does not, refused without it', async () => {
  const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN], config: { twilio_url_suffixes: ['/voice'] } });
  const body = JSON.stringify({ CallSid: 'CA123', CallStatus: 'completed' });
  const pathAndQuery = `${ingesterId}/voice?bodySHA256=${sha256(body)}`;
  const sig = sign(`${TEST_PUBLIC_URL}/in/${pathAndQuery}`);
  const ok = await h.post(pathAndQuery, body, { 'x-twilio-signature': sig });
  expect(ok.status).toBe(202);
  expect(await stored(ingesterId)).toEqual([{ type: 'completed', body }]);

  const tampered = body.replace('completed', 'failed');
  // Another body under the signed bodySHA256.
  expectSignatureRefusal(await h.post(pathAndQuery, tampered, { 'x-twilio-signature': sig }));
  // Its own hash, but the signature is over the URL with the original hash.
  expectSignatureRefusal(await h.post(`${ingesterId}/voice?bodySHA256=${sha256(tampered)}`, tampered, { 'x-twilio-signature': sig }));
  // No bodySHA256, the URL alone correctly signed: the body is not authenticated.
  expectSignatureRefusal(await h.post(`${ingesterId}/voice`, tampered, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${ingesterId}/voice`) }));
  // No bodySHA256, signed as though the JSON fields were form parameters.
  expectSignatureRefusal(await h.post(`${ingesterId}/voice`, body, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${ingesterId}/voice` + 'CallSidCA123CallStatuscompleted') }));

  expect(await stored(ingesterId)).toEqual([{ type: 'completed', body }]);
  expect(await rejections(ingesterId)).toEqual(Array.from({ length: 4 }, () => ({ reason_code: 'provider_verification_failed', detail: 'signature_mismatch' })));
});

describe('the signed URL is pinned to the configured suffixes (twilio_url_suffixes)', () => {
  const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
  /** Twilio's signed string for a form callback: the URL, then each parameter as key+value, keys sorted. */
  const concatOf = (params: Record<string, string>): string => Object.keys(params).sort().map((k) => k + params[k]).join('');

  test('a genuine SMS callback whose Body smuggles "?bodySHA256=<h>&x=": its signature replayed with the parameters moved into the path and JSON J as the body → 401, J not stored', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN], config: { twilio_url_suffixes: ['/sms'] } });
    const J = JSON.stringify({ SmsStatus: 'received', Body: 'forged', From: '+15550001111' });
    const params: Record<string, string> = {
      AccountSid: 'AC123',
      ApiVersion: '2010-04-01',
      Body: `?bodySHA256=${sha256(J)}&x=`,
      From: '+15550001111',
      MessageSid: 'SM9',
      SmsStatus: 'received',
      To: '+15551234567',
    };
    const sig = sign(`${TEST_PUBLIC_URL}/in/${ingesterId}/sms${concatOf(params)}`);
    const genuine = new URLSearchParams(params).toString();
    expect((await h.post(`${ingesterId}/sms`, genuine, { ...FORM, 'x-twilio-signature': sig })).status).toBe(202);

    // The exact forgery: the signed string is unchanged (URL + parameters), but now it reads as
    // a URL ending in "?bodySHA256=<sha256(J)>&x=…" signed alone, and J hashes to it.
    const forgedPath = `${ingesterId}/smsAccountSidAC123ApiVersion2010-04-01Body?bodySHA256=${sha256(J)}&x=From+15550001111MessageSidSM9SmsStatusreceivedTo+15551234567`;
    expect(`${TEST_PUBLIC_URL}/in/${forgedPath}`).toBe(`${TEST_PUBLIC_URL}/in/${ingesterId}/sms${concatOf(params)}`);
    expectSignatureRefusal(await h.post(forgedPath, J, { 'content-type': 'application/json', 'x-twilio-signature': sig }));

    expect(await stored(ingesterId)).toEqual([{ type: 'received', body: genuine }]);
    expect(await rejections(ingesterId)).toEqual([{ reason_code: 'provider_verification_failed', detail: 'signature_mismatch' }]);
  });

  test('a signed parameter dropped from the body by moving it into the path or the query → 401, nothing stored', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN], config: { twilio_url_suffixes: ['/sms'] } });
    const params: Record<string, string> = { AccountSid: 'AC123', MessageSid: 'SM9', SmsStatus: 'received', To: '+15551234567' };
    const sig = sign(`${TEST_PUBLIC_URL}/in/${ingesterId}/sms${concatOf(params)}`);
    const genuine = new URLSearchParams(params).toString();
    expect((await h.post(`${ingesterId}/sms`, genuine, { ...FORM, 'x-twilio-signature': sig })).status).toBe(202);

    // AccountSid leaves the body for the path: URL + remaining parameters is the same signed string.
    const { AccountSid: _moved, ...rest } = params;
    expectSignatureRefusal(await h.post(`${ingesterId}/smsAccountSidAC123`, new URLSearchParams(rest).toString(), { ...FORM, 'x-twilio-signature': sig }));
    // Into a query string: the suffix is no configured one either (refused before any HMAC).
    const viaQuery = `${ingesterId}/sms?AccountSidAC123`;
    expectSignatureRefusal(await h.post(viaQuery, new URLSearchParams(rest).toString(), { ...FORM, 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${viaQuery}${concatOf(rest)}`) }));

    expect(await stored(ingesterId)).toEqual([{ type: 'received', body: genuine }]);
    expect(await rejections(ingesterId)).toHaveLength(2);
  });

  test('genuine requests on a configured suffix are accepted (a form callback; JSON with the bodySHA256 Twilio appends, after the configured query too); the same correctly signed on another suffix are refused', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN], config: { twilio_url_suffixes: ['/sms', '/voice?lang=en'] } });
    const params: Record<string, string> = { MessageSid: 'SM1', MessageStatus: 'delivered', To: '+15551234567' };
    const form = new URLSearchParams(params).toString();
    const ok = await h.post(`${ingesterId}/sms`, form, { ...FORM, 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${ingesterId}/sms${concatOf(params)}`) });
    expect(ok.status).toBe(202);

    const json = JSON.stringify({ CallSid: 'CA1', CallStatus: 'completed' });
    const jsonPath = `${ingesterId}/voice?lang=en&bodySHA256=${sha256(json)}`;
    expect((await h.post(jsonPath, json, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${jsonPath}`) })).status).toBe(202);
    // JSON to the "/sms" suffix: bodySHA256 as its first query parameter.
    const smsJson = `${ingesterId}/sms?bodySHA256=${sha256(json)}`;
    expect((await h.post(smsJson, json, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${smsJson}`) })).status).toBe(202);

    expect(await stored(ingesterId)).toEqual([
      { type: 'delivered', body: form },
      { type: 'completed', body: json },
      { type: 'completed', body: json },
    ]);
    expect(await rejections(ingesterId)).toEqual([]);

    // Signed with the real token, but over URLs the customer never gave Twilio.
    for (const suffix of ['/sms2', '/sms/', '/SMS', '/voice', '/voice?lang=fr', '/sms?lang=en', '']) {
      expectSignatureRefusal(await h.post(`${ingesterId}${suffix}`, form, { ...FORM, 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${ingesterId}${suffix}${concatOf(params)}`) }));
    }
    const otherJson = `${ingesterId}/voice?lang=fr&bodySHA256=${sha256(json)}`;
    expectSignatureRefusal(await h.post(otherJson, json, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${otherJson}`) }));
    expect(await stored(ingesterId)).toHaveLength(3);
  });

  test('a correctly signed request to a suffix not configured → 401: by default only the bare hook URL', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN] });
    const params: Record<string, string> = { MessageSid: 'SM2', MessageStatus: 'sent' };
    const form = new URLSearchParams(params).toString();
    const bare = await h.post(ingesterId, form, { ...FORM, 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${ingesterId}${concatOf(params)}`) });
    expect(bare.status).toBe(202);
    const json = '{"CallStatus":"ringing"}';
    const bareJson = `${ingesterId}?bodySHA256=${sha256(json)}`;
    expect((await h.post(bareJson, json, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${bareJson}`) })).status).toBe(202);

    for (const suffix of ['/sms', '?lang=en', '/']) {
      expectSignatureRefusal(await h.post(`${ingesterId}${suffix}`, form, { ...FORM, 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${ingesterId}${suffix}${concatOf(params)}`) }));
    }
    // bodySHA256 anywhere but last is part of the suffix, never a switch to URL-only signing.
    const notLast = `${ingesterId}?bodySHA256=${sha256(json)}&x=1`;
    expectSignatureRefusal(await h.post(notLast, json, { 'x-twilio-signature': sign(`${TEST_PUBLIC_URL}/in/${notLast}`) }));

    expect((await stored(ingesterId)).map((e) => e.type)).toEqual(['sent', 'ringing']);
    expect(await rejections(ingesterId)).toHaveLength(4);
  });

  test('a captured JSON callback resent as a form whose one key is "?bodySHA256" (URL + key + value = the signed URL) → 401, nothing stored', async () => {
    const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN], config: { twilio_url_suffixes: ['', '/voice?lang=en'] } });
    const json = '{"CallStatus":"ringing"}';
    const signedPath = `${ingesterId}?bodySHA256=${sha256(json)}`;
    const sig = sign(`${TEST_PUBLIC_URL}/in/${signedPath}`);
    expect((await h.post(signedPath, json, { 'x-twilio-signature': sig })).status).toBe(202);
    // The form string is "?bodySHA256" + "=<hex>": the bare URL + it is the signed string.
    const asForm = new URLSearchParams({ '?bodySHA256': `=${sha256(json)}` }).toString();
    expectSignatureRefusal(await h.post(ingesterId, asForm, { ...FORM, 'x-twilio-signature': sig }));
    // Behind a configured query, the same with "&bodySHA256".
    const withQuery = `${ingesterId}/voice?lang=en&bodySHA256=${sha256(json)}`;
    const querySig = sign(`${TEST_PUBLIC_URL}/in/${withQuery}`);
    expect((await h.post(withQuery, json, { 'x-twilio-signature': querySig })).status).toBe(202);
    const ampForm = new URLSearchParams({ '&bodySHA256': `=${sha256(json)}` }).toString();
    expectSignatureRefusal(await h.post(`${ingesterId}/voice?lang=en`, ampForm, { ...FORM, 'x-twilio-signature': querySig }));
    expect(await stored(ingesterId)).toHaveLength(2);
  });
});
