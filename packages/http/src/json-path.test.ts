import { getPath, getStringAt, parsePath } from './json-path';

const doc = { type: 'invoice.paid', data: { kind: 'x', n: 3, ok: true, items: [{ name: 'a' }, { name: 'b' }], 'odd-key': 'y' } };

describe('json path getter', () => {
  test.each([
    ['$.type', 'invoice.paid'],
    ['type', 'invoice.paid'],
    ['$.data.kind', 'x'],
    ['data.kind', 'x'],
    ['$.data.items[1].name', 'b'],
    ["$.data['odd-key']", 'y'],
    ['$["data"]["kind"]', 'x'],
    ['$.data.n', '3'],
    ['$.data.ok', 'true'],
  ])('%s → %s', (path, expected) => {
    expect(getStringAt(doc, path)).toBe(expected);
  });

  test.each(['$.missing', '$.data.items[5].name', '$.data.items.name', '$.data', '$.type.length', '$.constructor', '$.__proto__', '$.data.items[0]'])('%s → null', (path) => {
    expect(getStringAt(doc, path)).toBeNull();
  });

  test('bad paths and non-objects give nothing', () => {
    expect(parsePath('$..type')).toBeNull();
    expect(parsePath('$.a[?(@.x)]')).toBeNull();
    expect(parsePath('a b')).toBeNull();
    expect(parsePath(Array.from({ length: 40 }, () => '.a').join(''))).toBeNull();
    expect(getPath(undefined, '$.type')).toBeUndefined();
    expect(getPath('text', '$.type')).toBeUndefined();
    expect(getPath(doc, '$')).toBe(doc);
  });
});
