// Standard Webhooks keys shorter than 24 bytes (stored before the API checked secrets) fail
// closed: `'!!!!…'` decodes to an empty HMAC key, whose signatures anyone can compute.
import { createHmac, randomBytes } from 'node:crypto';
import { providerCtx } from '../testing/provider-context';
import { verify } from './standard-webhooks';

const NOW = 1_700_000_000;
const body = '{"type":"forged"}';
const whsec = (bytes = 24): string => `whsec_${randomBytes(bytes).toString('base64')}`;
const keyOf = (secret: string): Buffer => Buffer.from(secret.replace(/^whsec_/, ''), 'base64');

/** Headers signed with `key` from the recipe (node:crypto), not with the code under test. */
function signed(key: Buffer): Record<string, string> {
  const sig = createHmac('sha256', key).update(`msg_1.${NOW}.`).update(body).digest('base64');
  return { 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW), 'webhook-signature': `v1,${sig}` };
}
const check = (secrets: string[], key: Buffer, ingesterId = 'ing_short') =>
  verify(providerCtx({ body, secrets, headers: signed(key), nowSeconds: NOW, ingesterId, logger: { warn: ((message: string, meta: Record<string, unknown>) => void warnings.push([message, meta])) as never } }));

let warnings: [string, Record<string, unknown>][];
beforeEach(() => {
  warnings = [];
});

describe('standard-webhooks: secrets decoding to fewer than 24 bytes never verify', () => {
  test('an empty key (the reviewer forgery: "!!!!!!!!!!!!!!!!") → signature_mismatch', () => {
    expect(keyOf('!!!!!!!!!!!!!!!!')).toHaveLength(0);
    expect(check(['!!!!!!!!!!!!!!!!'], Buffer.alloc(0))).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(check(['whsec_'], Buffer.alloc(0), 'ing_empty')).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  test('23 bytes is refused even when signed with that key; 24 bytes verifies', () => {
    const short = whsec(23);
    expect(check([short], keyOf(short))).toEqual({ ok: false, reason: 'signature_mismatch' });
    const enough = whsec(24);
    expect(check([enough], keyOf(enough))).toEqual({ ok: true });
  });

  test('rotation: the valid secret beside a short one still verifies, in either position; the short one never does', () => {
    const good = whsec();
    for (const secrets of [['!!!!!!!!!!!!!!!!', good], [good, '!!!!!!!!!!!!!!!!']]) {
      expect(check(secrets, keyOf(good))).toEqual({ ok: true });
      expect(check(secrets, Buffer.alloc(0))).toEqual({ ok: false, reason: 'signature_mismatch' });
    }
  });

  test('a warning once per ingester, naming the ingester id and never the secret', () => {
    const weak = whsec(16);
    check([weak], keyOf(weak), 'ing_warnA');
    check([weak], keyOf(weak), 'ing_warnA');
    check([whsec(), weak], Buffer.alloc(0), 'ing_warnA');
    check(['!!!!!!!!!!!!!!!!', whsec()], Buffer.alloc(0), 'ing_warnB');
    check([whsec()], Buffer.alloc(0), 'ing_warnC');
    expect(warnings.map(([, meta]) => meta['ingester_id'])).toEqual(['ing_warnA', 'ing_warnB']);
    expect(warnings[1]![1]).toMatchObject({ ingester_id: 'ing_warnB', secret_positions: [0], min_key_bytes: 24 });
    const text = JSON.stringify(warnings);
    for (const leaked of [weak, weak.slice('whsec_'.length), '!!!!']) expect(text).not.toContain(leaked);
  });
});
