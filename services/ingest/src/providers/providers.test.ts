import { randomBytes } from 'node:crypto';
import type { Provider } from '@hookline/signing';
import { providerCtx, tamper } from '../testing/provider-context';
import { signAs, SIGNATURE_HEADER } from '../testing/sign-request';
import { PROVIDER_ADAPTERS } from './index';

const URL_ = 'https://hooks.example.test/in/ing_abc?x=1';
const whsec = (): string => `whsec_${randomBytes(24).toString('base64')}`;

interface Case {
  provider: Provider;
  secrets: [string, string];
  body: string;
  contentType: string;
  badFormat: string;
  timestamped: boolean;
}

const cases: Case[] = [
  { provider: 'stripe', secrets: ['whsec_old_1', 'whsec_new_2'], body: '{"id":"evt_1","type":"invoice.paid"}', contentType: 'application/json', badFormat: 'v1=abc', timestamped: true },
  { provider: 'github', secrets: ['gh-old', 'gh-new'], body: '{"zen":"Keep it logically awesome."}', contentType: 'application/json', badFormat: 'sha1=0123', timestamped: false },
  { provider: 'shopify', secrets: ['shp-old', 'shp-new'], body: '{"id":820982911946154500}', contentType: 'application/json', badFormat: 'not base64!', timestamped: false },
  {
    provider: 'twilio',
    secrets: ['tw-old-token', 'tw-new-token'],
    body: 'To=%2B18005551212&Body=Hello+there&From=%2B14158675310&MessageStatus=received',
    contentType: 'application/x-www-form-urlencoded',
    badFormat: 'abc',
    timestamped: false,
  },
  { provider: 'standard-webhooks', secrets: [whsec(), whsec()], body: '{"type":"user.created","data":{}}', contentType: 'application/json', badFormat: 'v2,abc', timestamped: true },
  { provider: 'generic', secrets: ['gen-old', 'gen-new'], body: '{"type":"thing.happened"}', contentType: 'application/json', badFormat: 'v1=abc', timestamped: true },
];

const NOW = 1_760_000_000;

describe.each(cases)('$provider verification', (c) => {
  const adapter = PROVIDER_ADAPTERS[c.provider];
  const sign = (secret: string, t = NOW): Record<string, string> => signAs(c.provider, secret, c.body, { t, url: URL_ });
  const verify = (headers: Record<string, string>, body = c.body, secrets: string[] = [c.secrets[0]]) =>
    adapter.verify(providerCtx({ body, headers: { 'content-type': c.contentType, ...headers }, secrets, url: URL_, twilioUrlSuffixes: ['?x=1'], nowSeconds: NOW }));

  test('a correct signature is accepted', () => {
    expect(verify(sign(c.secrets[0]))).toEqual({ ok: true });
  });
  test('a tampered body is rejected', () => {
    expect(verify(sign(c.secrets[0]), tamper(c.body))).toEqual({ ok: false, reason: 'signature_mismatch' });
  });
  test('a wrong secret is rejected', () => {
    expect(verify(sign(c.provider === 'standard-webhooks' ? whsec() : 'someone-else'))).toEqual({ ok: false, reason: 'signature_mismatch' });
  });
  test('a missing signature header is rejected', () => {
    const { [SIGNATURE_HEADER[c.provider]]: _removed, ...headers } = sign(c.secrets[0]);
    expect(verify(headers)).toEqual({ ok: false, reason: 'missing_header' });
  });
  test('a malformed signature header is rejected', () => {
    expect(verify({ ...sign(c.secrets[0]), [SIGNATURE_HEADER[c.provider]]: c.badFormat })).toEqual({ ok: false, reason: 'bad_format' });
  });
  test('rotation: a request signed with either active secret is accepted', () => {
    expect(verify(sign(c.secrets[1]), c.body, [...c.secrets])).toEqual({ ok: true });
    expect(verify(sign(c.secrets[0]), c.body, [...c.secrets])).toEqual({ ok: true });
    expect(verify(sign(c.secrets[1]), c.body, [c.secrets[0]])).toEqual({ ok: false, reason: 'signature_mismatch' });
  });
  if (c.timestamped) {
    test('a stale (or far-future) timestamp is rejected; one within the tolerance passes', () => {
      expect(verify(sign(c.secrets[0], NOW - 301))).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
      expect(verify(sign(c.secrets[0], NOW + 301))).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
      expect(verify(sign(c.secrets[0], NOW - 299))).toEqual({ ok: true });
    });
  }
});

test("generic: X-Service-Timestamp is required beside the signature (SPEC: the signature plus X-Service-Timestamp) and must equal its t", () => {
  const verify = (headers: Record<string, string>) => PROVIDER_ADAPTERS.generic.verify(providerCtx({ body: '{}', headers: { 'content-type': 'application/json', ...headers }, secrets: ['gen'], url: URL_, nowSeconds: NOW }));
  const { 'X-Service-Timestamp': t, ...withoutTimestamp } = signAs('generic', 'gen', '{}', { t: NOW });
  expect(t).toBe(String(NOW));
  expect(verify({ ...withoutTimestamp, 'x-service-timestamp': String(NOW) })).toEqual({ ok: true });
  expect(verify(withoutTimestamp)).toEqual({ ok: false, reason: 'missing_header' });
  expect(verify({ ...withoutTimestamp, 'x-service-timestamp': String(NOW - 1) })).toEqual({ ok: false, reason: 'bad_format' });
});
