import { randomIdString, withRandomBytes } from './random-pool';

describe('pooled random bytes', () => {
  it('gives distinct values across many refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) seen.add(randomIdString(10, 'hex')); // ~12 refills of 4 KB
    expect(seen.size).toBe(5000);
  });

  it('never hands out the same bytes twice within one pool', () => {
    const offsets: number[] = [];
    for (let i = 0; i < 600; i++) withRandomBytes(16, (_b, at) => offsets.push(at));
    let refills = 0;
    for (let i = 1; i < offsets.length; i++) {
      if (offsets[i] === 0) refills++;
      else expect(offsets[i]).toBe(offsets[i - 1]! + 16);
    }
    expect(refills).toBeGreaterThanOrEqual(2); // 600 × 16 bytes span more than two 4 KB pools
  });

  it('encodes to the requested length', () => {
    expect(randomIdString(8, 'hex')).toMatch(/^[0-9a-f]{16}$/);
    expect(randomIdString(12, 'base64url')).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it('refuses more than the pool holds', () => {
    expect(() => withRandomBytes(5000, () => 0)).toThrow(RangeError);
  });

  it('the bytes are not constant (the pool is filled from the CSPRNG)', () => {
    const values = Array.from({ length: 64 }, () => withRandomBytes(1, (b, at) => b[at]!));
    expect(new Set(values).size).toBeGreaterThan(20);
  });
});
