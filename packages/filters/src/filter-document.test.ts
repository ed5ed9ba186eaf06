import { buildFilterDocument, parseBody, parseForm } from './filter-document';
import { matchesFilter } from './flow-filter';

const base = { type: 'x', ingesterId: 'ing_1', provider: 'generic', headers: {}, query: null, contentType: null, body: null };

describe('buildFilterDocument', () => {
  it('lower-cases header names and joins repeated values', () => {
    expect(buildFilterDocument({ ...base, headers: { 'X-Foo': 'a', Accept: ['b', 'c'] } }).headers).toEqual({ 'x-foo': 'a', accept: 'b, c' });
    expect(buildFilterDocument({ ...base, headers: [['X-A', '1'], ['x-a', '2']] }).headers).toEqual({ 'x-a': '1, 2' });
    expect(buildFilterDocument({ ...base, headers: 'nonsense' }).headers).toEqual({});
  });

  it('parses the query string with repeated names as arrays', () => {
    expect(buildFilterDocument({ ...base, query: '?a=1&b=2&a=3&c=%20x' }).query).toEqual({ a: ['1', '3'], b: '2', c: ' x' });
    expect(buildFilterDocument({ ...base, query: 'a=1' }).query).toEqual({ a: '1' });
    expect(buildFilterDocument(base).query).toEqual({});
  });

  it('carries type and source', () => {
    const d = buildFilterDocument({ ...base, type: null, provider: 'stripe' });
    expect(d.type).toBeNull();
    expect(d.source).toEqual({ ingester_id: 'ing_1', provider: 'stripe' });
  });
});

describe('parseBody', () => {
  it.each<[string | null, string, unknown]>([
    ['application/json', '{"a":1}', { a: 1 }],
    ['application/vnd.api+json; charset=utf-8', '[1,2]', [1, 2]],
    [null, '  {"a":[true]}', { a: [true] }],
    ['text/plain', '[1]', [1]],
    ['application/json', '{broken', null],
    ['application/json', '"just a string"', 'just a string'],
    ['text/plain', 'hello', null],
    ['application/x-www-form-urlencoded', 'From=%2B15551234567&Body=hi+there&To=1&To=2', { From: '+15551234567', Body: 'hi there', To: ['1', '2'] }],
    ['application/octet-stream', '\u0000\u0001', null],
  ])('%s %j', (ct, text, expected) => {
    expect(parseBody(ct, Buffer.from(text))).toEqual(expected);
  });

  it('handles empty and Uint8Array bodies', () => {
    expect(parseBody('application/json', Buffer.alloc(0))).toBeNull();
    expect(parseBody('application/json', null)).toBeNull();
    expect(parseBody('application/json', new TextEncoder().encode('{"u":"é"}'))).toEqual({ u: 'é' });
  });

  it('skips a leading UTF-8 byte-order mark (EF BB BF)', () => {
    const bom = (text: string): Buffer => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    expect(parseBody('application/json', bom('{"a":1}'))).toEqual({ a: 1 });
    expect(parseBody(null, bom(' [true]'))).toEqual([true]);
    expect(parseBody('application/x-www-form-urlencoded', bom('From=x&To=y'))).toEqual({ From: 'x', To: 'y' });
    expect(parseBody('application/json', bom(''))).toBeNull();
    // Only one, and only at the start.
    expect(parseBody('application/json', bom('\uFEFF{"a":1}'))).toBeNull();
    expect(parseBody('application/json', Buffer.from('{"a":"\uFEFF"}'))).toEqual({ a: '\uFEFF' });
    const doc = buildFilterDocument({ ...base, contentType: 'application/json', body: Buffer.concat([Buffer.from('zz'), bom('{"a":1}')]).subarray(2) });
    expect(matchesFilter({ match: { 'body.a': 1 } }, doc)).toBe(true);
  });

  it('parseForm never builds prototype keys', () => {
    const f = parseForm('__proto__=x&constructor=y');
    expect(Object.getPrototypeOf(f)).toBe(Object.prototype);
    expect(Object.keys(f).sort()).toEqual(['__proto__', 'constructor']);
  });
});
