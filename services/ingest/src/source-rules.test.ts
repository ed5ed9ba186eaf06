import * as crypto from 'node:crypto';
import { checkRequiredHeaders } from './source-rules';

// A required header can be a shared token: its value must be compared in constant time.
jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  return { ...actual, timingSafeEqual: jest.fn(actual.timingSafeEqual) };
});

test('present / equal rules; a configured value is compared with timingSafeEqual and never echoed', () => {
  const rules: [string, string | null][] = [['x-token', 's3cret-token'], ['x-present', null]];
  const compared = jest.mocked(crypto.timingSafeEqual);
  compared.mockClear();
  expect(checkRequiredHeaders(rules, { 'x-token': 's3cret-token', 'x-present': '' })).toEqual([]);
  expect(compared).toHaveBeenCalled();
  compared.mockClear();
  const errors = checkRequiredHeaders(rules, { 'x-token': 's3cret-tokeX' });
  expect(errors).toEqual([
    { field: 'headers.x-token', message: 'does not have the required value' },
    { field: 'headers.x-present', message: 'is required' },
  ]);
  expect(compared).toHaveBeenCalled();
  expect(JSON.stringify(errors)).not.toContain('s3cret');
  // Repeated headers are joined as node joins them, and must then equal the value as a whole.
  expect(checkRequiredHeaders([['x-token', 'a, b']], { 'x-token': ['a', 'b'] })).toEqual([]);
});
