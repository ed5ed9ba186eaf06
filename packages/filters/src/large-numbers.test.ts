// Integers beyond ±(2^53−1): a double rounds them (1234567890123456789 and 1234567890123456800
// are the same double), so a filter on one id matched its neighbours. Bodies read them
// exactly (bigint), comparisons are exact, and filters may not hold numbers that large.
import { Budget } from './budget';
import { buildFilterDocument, parseBody } from './filter-document';
import { compileFilter, validateFilter } from './flow-filter';
import { compareValues, deepEqual } from './json-values';
import { compileMatch } from './match/compile-match';

const docOf = (body: string) =>
  buildFilterDocument({ type: 'x', ingesterId: 'ing_1', provider: 'generic', headers: {}, query: null, contentType: 'application/json', body: Buffer.from(body) });
const json = (text: string): unknown => parseBody('application/json', Buffer.from(text));

describe('a body integer beyond ±(2^53−1) is read exactly', () => {
  it('as a bigint with its digits, at any depth and sign', () => {
    expect(json('{"user_id":1234567890123456789}')).toEqual({ user_id: 1234567890123456789n });
    expect(json('[-9007199254740993, {"a": [18446744073709551615]}]')).toEqual([-9007199254740993n, { a: [18446744073709551615n] }]);
    expect(json(' 12345678901234567890 ')).toBe(12345678901234567890n);
    expect(Object.getOwnPropertyDescriptor(json('{"__proto__": 1234567890123456789}'), '__proto__')?.value).toBe(1234567890123456789n);
    // Safe integers, fractions, exponents, strings and names stay as JSON.parse reads them.
    const text = '{"safe":9007199254740991,"sixteen":1000000000000000,"frac":1234567890123456789.5,"exp":1234567890123456789e2,"neg_exp":1e-1234567890123456789,"s":"1234567890123456789","esc":"a\\"1234567890123456789","k1234567890123456789":true}';
    expect(json(text)).toEqual(JSON.parse(text));
  });

  it('a body string cannot pose as a bigint', () => {
    expect(json('{"a":"~hookline-exact-integer-~1","b":12345678901234567890}')).toEqual({ a: '~hookline-exact-integer-~1', b: 12345678901234567890n });
  });
});

describe('exact comparison', () => {
  const b = new Budget(1e6);
  it('a bigint equals only the same integer', () => {
    expect(deepEqual(1234567890123456789n, 1234567890123456789n, b)).toBe(true);
    expect(deepEqual(1234567890123456789n, 1234567890123456800n, b)).toBe(false);
    expect(deepEqual({ a: [1234567890123456789n] }, { a: [1234567890123456790n] }, b)).toBe(false);
    // A double counts as its shortest decimal form (what JSON.stringify writes).
    expect(deepEqual(1234567890123456800n, 1234567890123456800, b)).toBe(true);
    expect(deepEqual(1234567890123456789n, 1234567890123456800, b)).toBe(false);
    expect(deepEqual(10n ** 21n, 1e21, b)).toBe(true);
    expect(deepEqual(1234567890123456789n, '1234567890123456789', b)).toBe(false);
  });

  it('orders bigints exactly, with each other and with doubles', () => {
    expect(compareValues(1234567890123456788n, 1234567890123456789n, b)).toBe(-1);
    expect(compareValues(9007199254740993n, 9007199254740991, b)).toBe(1);
    expect(compareValues(-9007199254740993n, 0.5, b)).toBe(-1);
    expect(compareValues(9007199254740993n, '9007199254740993', b)).toBeUndefined();
    expect(compareValues(1n, NaN, b)).toBeUndefined();
  });
});

describe('filters on large ids', () => {
  const body = '{"user_id":1234567890123456800,"a":1234567890123456788,"b":1234567890123456789,"c":1234567890123456789,"small":9007199254740993}';
  const doc = docOf(body);

  it('a match document holding one is refused, by the API and by the router (it matches nothing)', () => {
    // Read back from jsonb (or the request) through JSON.parse: already rounded to ...800.
    const filter = JSON.parse('{"match":{"body.user_id":1234567890123456789}}') as unknown;
    const message = 'must be within ±9007199254740991 (2^53−1): a larger number is rounded when read (this one reads as 1234567890123456800), so it cannot be matched exactly';
    expect(validateFilter(filter)).toEqual([{ field: 'filter.match.body.user_id', message }]);
    const c = compileFilter(filter);
    expect(c.valid).toBe(false);
    expect(c.matches(doc)).toBe(false);
  });

  it.each<[string, unknown, string]>([
    ['$eq', { 'body.id': { $eq: 2 ** 60 } }, 'filter.match.body.id.$eq'],
    ['$in item', { 'body.id': { $in: [1, -1234567890123456789] } }, 'filter.match.body.id.$in'],
    ['$gt', { $or: [{ type: 'a' }, { 'body.id': { $gt: 1e20 } }] }, 'filter.match.$or[1].body.id.$gt'],
    ['nested', { body: { data: { id: 9007199254740992 } } }, 'filter.match.body.data.id'],
    ['array value', { 'body.ids': [1, 9007199254740993] }, 'filter.match.body.ids'],
  ])('refuses a match %s beyond the safe range', (_name, match, field) => {
    expect(validateFilter({ match })).toEqual([{ field, message: expect.stringContaining('must be within ±9007199254740991') }]);
    expect(compileMatch(match, 'm').errors).toHaveLength(1);
    // Numbers within the safe range, and fractions, are taken.
    expect(validateFilter({ match: { 'body.id': { $in: [9007199254740991, -9007199254740991, 0.1, 1.5e-300] }, 'body.x': { $lt: 123456789.123 } } })).toEqual([]);
  });

  it.each<[string, string]>([
    ['$.body[?(@.user_id == 1234567890123456789)]', '(1234567890123456789 reads as 1234567890123456800)'],
    ['$[?(@.body.a > -9007199254740992)]', '(-9007199254740992)'],
    ['$[?(@.body.a < 1e300)]', '(1e300)'],
    ['$[?(@.body.a == 0.1234567890123456789)]', 'has a number with more digits than a 64-bit number holds (0.1234567890123456789 reads as 0.12345678901234568)'],
    ['$[?(@.body.a == 123456789012345.6789)]', '(123456789012345.6789 reads as 123456789012345.67)'],
  ])('refuses the JSONPath literal in %s', (jsonpath, message) => {
    expect(validateFilter({ jsonpath: ['$.body', jsonpath] })).toEqual([{ field: 'filter.jsonpath[1]', message: expect.stringContaining(message) }]);
    // Literals a double holds as written are taken, and digits in names and strings are not literals.
    expect(validateFilter({ jsonpath: '$[?(@.a == 9007199254740991 || @.a == -9007199254740991 || @.a < 0.1 || @.a == 1.50 || @.a == 1e3 || @.a == -0 || @.a == 2.5E-3)]' })).toEqual([]);
    expect(validateFilter({ jsonpath: "$.body['1234567890123456789'][?(@.x-1234567890123456789 == '0.1234567890123456789')]" })).toEqual([]);
  });

  it('a stored JSONPath literal (the router) compares exactly as written', () => {
    const c = compileFilter({ jsonpath: '$.body[?(@.user_id == 1234567890123456789)]' });
    expect(c.valid).toBe(true);
    expect(c.matches(doc)).toBe(false); // the body's id is ...800
    expect(c.matches(docOf('{"user_id":1234567890123456789}'))).toBe(true);
    expect(compileFilter({ jsonpath: '$.body[?(@.user_id != 1234567890123456789)]' }).matches(doc)).toBe(true);
  });

  it('compares body values exactly with each other', () => {
    const m = (jsonpath: string): boolean => compileFilter({ jsonpath }).matches(doc);
    expect(m('$.body[?(@.a == @.b)]')).toBe(false);
    expect(m('$.body[?(@.a < @.b)]')).toBe(true);
    expect(m('$.body[?(@.b == @.c)]')).toBe(true);
    expect(m('$.body[?(@.small > 9007199254740991)]')).toBe(true);
    expect(compileFilter({ match: { 'body.small': { $gte: 9007199254740991 } } }).matches(doc)).toBe(true);
    expect(compileFilter({ match: { 'body.small': 9007199254740991 } }).matches(doc)).toBe(false);
    // A string never equals a body number, however large.
    expect(compileFilter({ match: { 'body.b': '1234567890123456789' } }).matches(doc)).toBe(false);
    expect(compileFilter({ jsonpath: "$.body[?(@.b == '1234567890123456789')]" }).matches(doc)).toBe(false);
  });
});
