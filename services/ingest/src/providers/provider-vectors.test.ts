import { createHash, createHmac } from 'node:crypto';
import { providerCtx } from '../testing/provider-context';
import * as generic from './generic';
import * as github from './github';
import * as shopify from './shopify';
import * as standardWebhooks from './standard-webhooks';
import * as stripe from './stripe';
import * as twilio from './twilio';

// Test vectors published by the providers themselves.

describe('published vectors', () => {
  test("GitHub: 'It's a Secret to Everybody' / 'Hello, World!'", () => {
    const ctx = providerCtx({
      body: 'Hello, World!',
      secrets: ["It's a Secret to Everybody"],
      headers: { 'X-Hub-Signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' },
    });
    expect(github.verify(ctx)).toEqual({ ok: true });
  });

  test('Standard Webhooks: the specification example (whsec_MfKQ…, msg_p5jX…)', () => {
    const ctx = providerCtx({
      body: '{"test": 2432232314}',
      secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      nowSeconds: 1614265330,
      headers: {
        'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'webhook-timestamp': '1614265330',
        // A v1a (asymmetric) entry and a stale v1 beside the right one, as rotation produces.
        'webhook-signature': 'v1a,AAAA v1,Zm9vYmFy v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      },
    });
    expect(standardWebhooks.verify(ctx)).toEqual({ ok: true });
    expect(standardWebhooks.verify({ ...ctx, nowSeconds: 1614265330 + 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
  });

  // Twilio's security docs: auth token 12345, https://mycompany.com/myapp.php?foo=1&bar=2.
  const twilioForm = 'CallSid=CA1234567890ABCDE&Caller=%2B14158675310&Digits=1234&From=%2B14158675310&To=%2B18005551212';
  test('Twilio: the documented form-encoded example', () => {
    const ctx = providerCtx({
      body: twilioForm,
      secrets: ['12345'],
      url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'X-Twilio-Signature': 'GvWf1cFY/Q7PnoempGyD5oXAezc=' },
    });
    expect(twilio.verify(ctx)).toEqual({ ok: true });
    // Twilio helpers accept the URL with or without an explicit port.
    expect(twilio.verify({ ...ctx, url: 'https://mycompany.com:443/myapp.php?foo=1&bar=2' })).toEqual({ ok: true });
    expect(twilio.verify({ ...ctx, url: 'https://mycompany.com/myapp.php?foo=1&bar=3' })).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  test('Twilio: earlier edition of the same example (Caller +14158675309)', () => {
    const ctx = providerCtx({
      body: twilioForm.replace(/8675310/g, '8675309'),
      secrets: ['12345'],
      url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'X-Twilio-Signature': 'RSOYDt4T1cUTdK1PDd93/VVr8B8=' },
    });
    expect(twilio.verify(ctx)).toEqual({ ok: true });
  });
});

describe('provider specifics', () => {
  test('Twilio JSON bodies: the URL carries bodySHA256 and the body must hash to it', () => {
    const body = '{"CallSid":"CA1234567890ABCDE","Caller":"+12349013030"}';
    const url = `https://example.com/in/ing_x?bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
    const sig = createHmac('sha1', 'tok').update(url).digest('base64');
    const ctx = providerCtx({ body, secrets: ['tok'], url, headers: { 'content-type': 'application/json', 'X-Twilio-Signature': sig } });
    expect(twilio.verify(ctx)).toEqual({ ok: true });
    expect(twilio.verify({ ...ctx, body: Buffer.from(body.replace('CA12', 'CA99')) })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(twilio.urlVariants('http://h.test:8080/p?q')).toEqual(['http://h.test:8080/p?q', 'http://h.test/p?q']);
  });

  test('Twilio: a non-form or empty body without bodySHA256 is refused, even with the URL correctly signed', () => {
    const url = 'https://example.com/in/ing_x/status';
    const sig = createHmac('sha1', 'tok').update(url).digest('base64');
    const ctx = (body: string, contentType: string) => providerCtx({ body, secrets: ['tok'], url, headers: { 'content-type': contentType, 'X-Twilio-Signature': sig } });
    // The signature covers the URL alone: the body would go unauthenticated.
    expect(twilio.verify(ctx('{"MessageStatus":"failed"}', 'application/json'))).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(twilio.verify(ctx('MessageStatus=failed', 'text/plain'))).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(twilio.verify(ctx('', 'application/json'))).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(twilio.verify(ctx('', 'application/x-www-form-urlencoded'))).toEqual({ ok: false, reason: 'signature_mismatch' });
    // An empty body with bodySHA256 (the hash of nothing) in the signed URL is authenticated.
    const emptyUrl = `${url}?bodySHA256=${createHash('sha256').update('').digest('hex')}`;
    const emptySig = createHmac('sha1', 'tok').update(emptyUrl).digest('base64');
    expect(twilio.verify(providerCtx({ body: '', secrets: ['tok'], url: emptyUrl, twilioUrlSuffixes: ['/status'], headers: { 'content-type': 'application/json', 'X-Twilio-Signature': emptySig } }))).toEqual({ ok: true });
  });

  test('Twilio: only a trailing bodySHA256 parameter is taken off the suffix (where Twilio appends it)', () => {
    const h = 'ab'.repeat(32);
    expect(twilio.splitBodyHash(`/voice?bodySHA256=${h}`)).toEqual({ configured: '/voice', bodyHash: h });
    expect(twilio.splitBodyHash(`?lang=en&bodySHA256=${h}`)).toEqual({ configured: '?lang=en', bodyHash: h });
    expect(twilio.splitBodyHash(`?bodySHA256=${h}`)).toEqual({ configured: '', bodyHash: h });
    // Anywhere else it is part of the suffix, which must then be configured as such.
    for (const s of [`?bodySHA256=${h}&x=`, `/sms?bodySHA256=${h}&x=From+1555`, `/a&bodySHA256=${h}`, `?a=1?bodySHA256=${h}`, `?xbodySHA256=${h}`, `?bodySHA256=${h}0`, '/voice']) {
      expect(twilio.splitBodyHash(s)).toEqual({ configured: s, bodyHash: null });
    }
  });

  test('Twilio: repeated form keys are signed with their values sorted', () => {
    const ctx = providerCtx({ body: 'b=2&a=z&a=y', secrets: [], headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(twilio.formString(ctx)).toBe('aya' + 'zb2');
  });

  test('Shopify accepts the header names without X-', () => {
    const body = '{"id":1}';
    const ctx = providerCtx({
      body,
      secrets: ['s'],
      headers: { 'Shopify-Hmac-Sha256': createHmac('sha256', 's').update(body).digest('base64'), 'Shopify-Topic': 'orders/create', 'Shopify-Webhook-Id': 'w-1' },
    });
    expect(shopify.verify(ctx)).toEqual({ ok: true });
    expect(shopify.eventType(ctx)).toBe('orders/create');
    expect(shopify.dedupId(ctx)).toBe('w-1');
  });

  test('Stripe: any one of several v1 signatures may match', () => {
    const body = '{"id":"evt_9","type":"charge.succeeded"}';
    const good = createHmac('sha256', 'whsec_x').update(`100.${body}`).digest('hex');
    const ctx = providerCtx({ body, secrets: ['whsec_x'], nowSeconds: 100, headers: { 'Stripe-Signature': `t=100,v1=${'0'.repeat(64)},v1=${good}` } });
    expect(stripe.verify(ctx)).toEqual({ ok: true });
    expect(stripe.eventType(ctx)).toBe('charge.succeeded');
    expect(stripe.dedupId(ctx)).toBe('evt_9');
  });

  test('generic: the hex signature is accepted in upper case too (hex is case-insensitive)', () => {
    const body = '{"type":"order.paid"}';
    const sig = createHmac('sha256', 'gen-secret').update(`100.${body}`).digest('hex');
    const ctx = providerCtx({ body, secrets: ['gen-secret'], nowSeconds: 100, headers: { 'X-Service-Timestamp': '100', 'X-Service-Signature': `t=100,v1=${sig.toUpperCase()}` } });
    expect(generic.verify(ctx)).toEqual({ ok: true });
    expect(generic.verify({ ...ctx, body: Buffer.from(body.replace('paid', 'void')) })).toEqual({ ok: false, reason: 'signature_mismatch' });
  });
  test('event types and delivery ids of the other providers', () => {
    const gh = providerCtx({ body: '{}', secrets: [], headers: { 'X-GitHub-Event': 'push', 'X-GitHub-Delivery': 'd-1' } });
    expect([github.eventType(gh), github.dedupId(gh)]).toEqual(['push', 'd-1']);
    const sw = providerCtx({ body: '{"type":"user.created"}', secrets: [], headers: { 'webhook-id': 'msg_2' } });
    expect([standardWebhooks.eventType(sw), standardWebhooks.dedupId(sw)]).toEqual(['user.created', 'msg_2']);
    const tw = providerCtx({ body: 'MessageStatus=delivered', secrets: [], headers: { 'content-type': 'application/x-www-form-urlencoded', 'I-Twilio-Idempotency-Token': 'tok-1' } });
    expect([twilio.eventType(tw), twilio.dedupId(tw)]).toEqual(['delivered', 'tok-1']);
    expect(github.dedupId(providerCtx({ body: '', secrets: [] }))).toBeNull();
  });
});
