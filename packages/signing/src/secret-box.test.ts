import { createSecretBox } from './secret-box';

const box = createSecretBox('test-secrets-key');
const parts = (sealed: string) => sealed.split('.') as [string, string, string, string];
const b64 = (s: string) => Buffer.from(s, 'base64url');

describe('secret box', () => {
  it('opens what it sealed: a 12-byte IV and a 16-byte tag', () => {
    const sealed = box.seal('hello');
    const [v, iv, tag] = parts(sealed);
    expect([v, b64(iv).length, b64(tag).length]).toEqual(['v1', 12, 16]);
    expect(box.open(sealed)).toBe('hello');
    expect(() => createSecretBox('another key').open(sealed)).toThrow();
  });

  it.each([4, 8, 12, 15])('refuses a tag truncated to %i bytes (GCM would check only those)', (n) => {
    const [v, iv, tag, data] = parts(box.seal('hello'));
    const short = b64(tag).subarray(0, n).toString('base64url');
    expect(() => box.open([v, iv, short, data].join('.'))).toThrow();
  });

  it('refuses a tag longer than 16 bytes and an IV of another length than 12', () => {
    const [v, iv, tag, data] = parts(box.seal('hello'));
    const long = Buffer.concat([b64(tag), Buffer.from([0])]).toString('base64url');
    expect(() => box.open([v, iv, long, data].join('.'))).toThrow();
    for (const otherIv of [b64(iv).subarray(0, 8), Buffer.concat([b64(iv), Buffer.alloc(4)])]) {
      expect(() => box.open([v, otherIv.toString('base64url'), tag, data].join('.'))).toThrow();
    }
  });

  it('still refuses a tampered tag or body and unknown formats', () => {
    const [v, iv, tag, data] = parts(box.seal('hello'));
    const flipped = Buffer.from(b64(tag));
    flipped[0]! ^= 1;
    expect(() => box.open([v, iv, flipped.toString('base64url'), data].join('.'))).toThrow();
    expect(() => box.open([v, iv, tag, Buffer.from('other').toString('base64url')].join('.'))).toThrow();
    expect(() => box.open(['v2', iv, tag, data].join('.'))).toThrow('unknown format');
    expect(() => box.open('garbage')).toThrow('unknown format');
  });
});
