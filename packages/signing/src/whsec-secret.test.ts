import { Webhook } from 'standardwebhooks';
import { newWhsecSecret, signStandardWebhook, whsecKey } from './standard-webhooks';
import { whsecFieldErrors, whsecSecretProblem } from './whsec-secret';

const b64 = (n: number, fill = 7) => Buffer.alloc(n, fill).toString('base64');
const body = Buffer.from('{"a":1}');

/** What a consumer's `standardwebhooks` library makes of a secret Hookline signs with. */
function libraryVerifies(secret: string): boolean {
  const headers = signStandardWebhook([secret], 'dlv_x', Math.floor(Date.now() / 1000), body);
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

describe('Standard Webhooks secrets (whsecSecretProblem)', () => {
  const valid = [`whsec_${b64(24)}`, `whsec_${b64(64)}`, `whsec_${b64(25)}`, `whsec_${b64(26)}`, `whsec_${b64(32, 0xfb)}`, b64(24), b64(48)];
  const invalid: [string, string][] = [
    ['!!!!!!!!!!!!!!!!', 'decodes to 0 bytes (an empty HMAC key)'],
    ['my-shared-secret-2024!', 'not base64: decodes leniently to 15 bytes'],
    [`whsec_${b64(23)}`, 'too short'],
    [`whsec_${b64(65)}`, 'too long'],
    [`whsec_${b64(25).replace(/=+$/, '')}`, 'padding missing'],
    [`whsec_${Buffer.alloc(32, 0xfb).toString('base64url')}`, 'base64url alphabet'],
    [`whsec_${b64(24).slice(0, 16)} ${b64(24).slice(16)}`, 'whitespace inside'],
    [`whsec_${b64(24)}\n`, 'trailing newline'],
    [`whsec_${b64(25).slice(0, -3)}R==`, 'non-canonical trailing bits'],
    [`WHSEC_${b64(24)}`, 'prefix in another case'],
    ['whsec_', 'prefix only'],
    ['', 'empty'],
  ];

  it('accepts whsec_ + padded standard base64 of 24..64 bytes, and the same without the prefix', () => {
    for (const s of valid) expect([s, whsecSecretProblem(s)]).toEqual([s, null]);
  });

  it('accepts every secret Hookline generates', () => {
    for (let i = 0; i < 200; i++) expect(whsecSecretProblem(newWhsecSecret())).toBeNull();
  });

  it.each(invalid)('refuses %j (%s)', (secret) => {
    expect(whsecSecretProblem(secret)).toMatch(/^must be whsec_ followed by standard base64/);
  });

  it('what it accepts, the standardwebhooks library verifies with the same key bytes', () => {
    for (const s of valid) expect([s, libraryVerifies(s)]).toEqual([s, true]);
    // The two the audit found: the library refuses both secrets outright.
    expect(libraryVerifies('!!!!!!!!!!!!!!!!')).toBe(false);
    expect(libraryVerifies('my-shared-secret-2024!')).toBe(false);
    expect(whsecKey('!!!!!!!!!!!!!!!!')).toHaveLength(0);
  });

  it('names the field, and each bad entry of a list', () => {
    expect(whsecFieldErrors('signing_secret', undefined)).toEqual([]);
    expect(whsecFieldErrors('signing_secret', valid[0])).toEqual([]);
    expect(whsecFieldErrors('signing_secret', '!!!!!!!!!!!!!!!!')).toEqual([{ field: 'signing_secret', message: expect.stringMatching(/^must be whsec_/) }]);
    expect(whsecFieldErrors('config.signing_secrets', [valid[0]!, 'short', valid[1]!, `whsec_${b64(8)}`]).map((e) => e.field)).toEqual([
      'config.signing_secrets.1',
      'config.signing_secrets.3',
    ]);
    expect(whsecFieldErrors('config.signing_secrets', [`whsec_${b64(8)}`])[0]!.message).toContain('(it encodes 8)');
  });
});
