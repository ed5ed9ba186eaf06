import { createHmac } from 'node:crypto';
import { canonical, checkSignature, signRecord, type Scalar } from './canonical';

// The definition the receipts already issued were signed with: any change of bytes would
// make them fail verification.
const reference = (r: Record<string, Scalar>): string => JSON.stringify(Object.fromEntries(Object.keys(r).sort().map((k) => [k, r[k]])));

const receipt: Record<string, Scalar> = {
  v: 1,
  id: 'rcp_01k0000000abcdefghjkmnpqrs',
  tenant_id: 'ten_x',
  destination_origin: 'https://example.test:8443',
  attempt_number: 3,
  outcome: 'failed',
  status_code: null,
  error_kind: 'timeout',
  started_at: '2026-11-21T10:00:00.000Z',
  duration_ms: 1500.5,
  quoted: 'a "quote", a \\ backslash, a line\nbreak, é and \u2028',
  ok: true,
  signature: 'abc',
};

describe('canonical', () => {
  it('gives the same bytes as the reference definition', () => {
    expect(canonical(receipt)).toBe(reference(receipt));
    expect(canonical(receipt)).toBe(reference(receipt)); // second call: the cached shape
  });

  it('orders keys the way JSON.stringify does when some are array indexes', () => {
    const r = { b: 1, '10': 'x', '2': 'y', a: null };
    expect(canonical(r)).toBe(reference(r));
    expect(canonical(r)).toBe('{"2":"y","10":"x","a":null,"b":1}');
  });

  it('leaves out undefined values and the omitted key', () => {
    const r = { b: 1, a: undefined as unknown as Scalar, signature: 's' };
    expect(canonical(r)).toBe('{"b":1,"signature":"s"}');
    expect(canonical(r, 'signature')).toBe('{"b":1}');
    expect(canonical({})).toBe('{}');
    expect(canonical({ signature: 's' }, 'signature')).toBe('{}');
  });

  it('signs everything but the signature, as before', () => {
    const key = Buffer.alloc(32, 7);
    const { signature: _s, ...body } = receipt;
    const expected = createHmac('sha256', key).update(reference(body)).digest('hex');
    expect(signRecord(key, receipt)).toBe(expected);
    expect(checkSignature(key, { ...receipt, signature: expected })).toBe(true);
    expect(checkSignature(key, { ...receipt, signature: expected, outcome: 'succeeded' })).toBe(false);
  });
});
