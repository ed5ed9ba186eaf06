// Twilio signs the URL plus the form parameters; any other body is authenticated only by a
// bodySHA256 query parameter in the signed URL. A request whose signature covers the URL
// alone must not get its body in: hook paths take any suffix, so a captured form callback's
// signature can be replayed with its parameters moved into the path and any body sent.
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
  const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN] });
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
  const { ingesterId } = await h.seedIngester({ provider: 'twilio', secrets: [TOKEN] });
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
