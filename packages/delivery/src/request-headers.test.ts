import { Webhook } from 'standardwebhooks';
import { hmac, newWhsecSecret, parseServiceSignature, verifyServiceSignature, whsecKey } from '@hookline/signing';
import { buildHeaders, signatureHeaders } from './request-headers';

const body = Buffer.from('{"amount": 100,\n "note": "caf\u00e9"}\n');
const verify = (secret: string, h: Record<string, string>) => verifyServiceSignature([whsecKey(secret)], body, h['x-service-signature'], h['x-service-timestamp'], 300);
const standard = (h: Record<string, string>) => ({ 'webhook-id': h['webhook-id']!, 'webhook-timestamp': h['webhook-timestamp']!, 'webhook-signature': h['webhook-signature']! });

describe('X-Service-Signature during a secret rotation', () => {
  const newest = newWhsecSecret();
  const previous = newWhsecSecret();

  it('verifies with either active secret, like webhook-signature', () => {
    const h = signatureHeaders([newest, previous], 'dlv_rot', body);
    expect(verify(newest, h)).toEqual({ ok: true });
    expect(verify(previous, h)).toEqual({ ok: true });
    expect(verify(newWhsecSecret(), h)).toEqual({ ok: false, reason: 'signature_mismatch' });
    for (const secret of [newest, previous]) expect(new Webhook(secret).verify(body, standard(h))).toEqual({ amount: 100, note: 'café' });
  });

  it('carries one v1 per active secret, newest last, after t: two after a rotation, exactly one with one secret, none without', () => {
    const now = 1_800_000_000;
    const sig = (s: string) => hmac('sha256', whsecKey(s), `${now}.`, body).toString('hex');
    const rotated = signatureHeaders([newest, previous], 'dlv_rot', body, now);
    expect(rotated['x-service-signature']).toBe(`t=${now},v1=${sig(previous)},v1=${sig(newest)}`);
    expect(rotated['x-service-timestamp']).toBe(String(now));
    expect(parseServiceSignature(rotated['x-service-signature']!)).toEqual({ t: now, v1: [sig(previous), sig(newest)] });
    // A consumer who parsed the header into a map (the README's snippet before rotations
    // signed with both secrets) keeps the last v1=: it must be the newest secret's.
    const asMap = Object.fromEntries(rotated['x-service-signature']!.split(',').map((p) => p.split('=')));
    expect(asMap.v1).toBe(sig(newest));
    const one = signatureHeaders([newest], 'dlv_one', body, now);
    expect(one['x-service-signature']).toBe(`t=${now},v1=${sig(newest)}`);
    expect(verifyServiceSignature([whsecKey(previous)], body, one['x-service-signature'], one['x-service-timestamp'], 300, now).ok).toBe(false);
    expect(signatureHeaders([], 'dlv_none', body, now)).toEqual({});
  });

  it('buildHeaders signs the same way (the deliverer and the edge lease both use it)', () => {
    const h = buildHeaders({
      deliveryId: 'dlv_b',
      eventId: 'evt_b',
      eventType: null,
      correlationId: 'corr',
      receivedAt: new Date(0),
      body,
      contentType: 'application/json',
      secrets: [newest, previous],
      customHeaders: {},
    });
    expect(parseServiceSignature(h['x-service-signature']!).v1).toHaveLength(2);
    expect(verify(previous, h)).toEqual({ ok: true });
  });
});
