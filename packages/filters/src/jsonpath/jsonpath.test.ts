import { Budget, BudgetExceededError } from '../budget';
import { compileJsonPath, queryJsonPath } from './compile-jsonpath';
import { JsonPathSyntaxError } from './scanner';

// Goessner's bookstore, the example every JSONPath implementation is checked against.
const store = {
  store: {
    book: [
      { category: 'reference', author: 'Nigel Rees', title: 'Sayings of the Century', price: 8.95 },
      { category: 'fiction', author: 'Evelyn Waugh', title: 'Sword of Honour', price: 12.99 },
      { category: 'fiction', author: 'Herman Melville', title: 'Moby Dick', isbn: '0-553-21311-3', price: 8.99 },
      { category: 'fiction', author: 'J. R. R. Tolkien', title: 'The Lord of the Rings', isbn: '0-395-19395-8', price: 22.99 },
    ],
    bicycle: { color: 'red', price: 19.95 },
  },
  'odd key': { 'x.y': 1, "it's": 2 },
  flags: { on: true, off: false, nothing: null },
};
const titles = (path: string): unknown[] => queryJsonPath(store, path).map((b) => (b as { title: string }).title);

describe('JSONPath selectors', () => {
  it.each([
    ['$', [store]],
    ['$.store.bicycle.color', ['red']],
    ["$['store']['bicycle']['color']", ['red']],
    ['$["store"].bicycle["price"]', [19.95]],
    ["$['odd key']['x.y']", [1]],
    ["$['odd key']['it\\'s']", [2]],
    ['$.store.book[0].author', ['Nigel Rees']],
    ['$.store.book[-1].author', ['J. R. R. Tolkien']],
    ['$.store.book[-5].author', []],
    ['$.store.book[9].author', []],
    ['$.store.book[*].author', ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']],
    ['$.store.bicycle.*', ['red', 19.95]],
    ['$..author', ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']],
    ['$.store..price', [8.95, 12.99, 8.99, 22.99, 19.95]],
    ['$..book[2].author', ['Herman Melville']],
    ['$..book[0,3].author', ['Nigel Rees', 'J. R. R. Tolkien']],
    ["$.store.bicycle['color','price']", ['red', 19.95]],
    ['$..book[1:3].author', ['Evelyn Waugh', 'Herman Melville']],
    ['$..book[-2:].author', ['Herman Melville', 'J. R. R. Tolkien']],
    ['$..book[:1].author', ['Nigel Rees']],
    ['$..book[::2].author', ['Nigel Rees', 'Herman Melville']],
    ['$..book[::-1].price', [22.99, 8.99, 12.99, 8.95]],
    ['$..book[0:4:0].price', []],
    ['$.flags.nothing', [null]],
    ['$.missing', []],
    ['$.store.bicycle.color.length', []],
    ['$.store.book.author', []],
  ])('%s', (path, expected) => {
    expect(queryJsonPath(store, path)).toEqual(expected);
  });

  it('never reads inherited members', () => {
    expect(queryJsonPath({}, '$.constructor')).toEqual([]);
    expect(queryJsonPath({ a: [] }, '$.a.length')).toEqual([]);
    expect(queryJsonPath({}, "$['__proto__']")).toEqual([]);
  });

  it('recursive descent with a wildcard visits every value', () => {
    expect(queryJsonPath({ a: { b: [1, { c: 2 }] } }, '$..*')).toEqual([{ b: [1, { c: 2 }] }, [1, { c: 2 }], 1, { c: 2 }, 2]);
  });
});

describe('JSONPath filters', () => {
  it.each([
    ['$..book[?(@.isbn)]', ['Moby Dick', 'The Lord of the Rings']],
    ['$..book[?(!@.isbn)]', ['Sayings of the Century', 'Sword of Honour']],
    ['$..book[?(@.price < 10)]', ['Sayings of the Century', 'Moby Dick']],
    ['$..book[?(@.price <= 8.99)]', ['Sayings of the Century', 'Moby Dick']],
    ['$..book[?(@.price > 20)]', ['The Lord of the Rings']],
    ['$..book[?(@.price >= 22.99)]', ['The Lord of the Rings']],
    ["$..book[?(@.category == 'reference')]", ['Sayings of the Century']],
    ['$..book[?(@.category != "fiction")]', ['Sayings of the Century']],
    ["$..book[?(@.category == 'fiction' && @.price < 10)]", ['Moby Dick']],
    ["$..book[?(@.price > 20 || @.category == 'reference')]", ['Sayings of the Century', 'The Lord of the Rings']],
    ["$..book[?(!(@.category == 'fiction' || @.price > 100))]", ['Sayings of the Century']],
    ["$..book[?(@.category == 'fiction' && (@.isbn || @.price > 12))]", ['Sword of Honour', 'Moby Dick', 'The Lord of the Rings']],
    ['$..book[?(@.price < $.store.bicycle.price)]', ['Sayings of the Century', 'Sword of Honour', 'Moby Dick']],
    ['$..book[?@.price > 20]', ['The Lord of the Rings']],
    ['$..book[?(@.price > "10")]', []],
  ])('%s', (path, expected) => {
    expect(titles(path)).toEqual(expected);
  });

  it('tests an object itself (so $.body[?(…)] selects the body)', () => {
    const doc = { body: { amount: 25, currency: 'usd' } };
    expect(queryJsonPath(doc, '$.body[?(@.amount > 10)]')).toEqual([doc.body]);
    expect(queryJsonPath(doc, '$.body[?(@.amount > 30)]')).toEqual([]);
  });

  it('compares literals of every kind', () => {
    const doc = { items: [{ v: true }, { v: false }, { v: null }, { v: 0 }, { v: '' }, { v: 1e3 }, {}] };
    const idx = (f: string): number[] => queryJsonPath(doc, `$.items[?(${f})]`).map((x) => doc.items.indexOf(x as never));
    expect(idx('@.v == true')).toEqual([0]);
    expect(idx('@.v == false')).toEqual([1]);
    expect(idx('@.v == null')).toEqual([2]);
    expect(idx('@.v == 1000')).toEqual([5]);
    expect(idx("@.v == ''")).toEqual([4]);
    expect(idx('@.v')).toEqual([0, 1, 2, 3, 4, 5]); // existence, not truthiness
    expect(idx('@.v != null')).toEqual([0, 1, 3, 4, 5, 6]); // a missing value is not null
    expect(idx('@.v < 1')).toEqual([3]);
  });

  it('compares structured values by equality', () => {
    const doc = { a: [{ t: [1, 2] }, { t: [2, 1] }, { t: { k: 'v' } }] };
    expect(queryJsonPath(doc, '$.a[?(@.t == $.a[0].t)]')).toEqual([doc.a[0]]);
  });
});

describe('JSONPath syntax errors', () => {
  it.each([
    ['', "must start with '$'"],
    ['store.book', "must start with '$'"],
    ['$.', 'member name'],
    ['$[', 'expected a name'],
    ['$[0', "expected ']'"],
    ["$['a]", 'unterminated string'],
    ['$..', 'member name'],
    ['$.a b', "unexpected 'b'"],
    ['$[?(@.a == )]', 'literal'],
    ['$[?(@.a == 1]', "expected ')'"],
    ['$[?(1)]', 'must be compared'],
    ['$[?(@.a = 1)]', "expected ')'"],
    ['$[?(@.a == "\\x")]', 'bad escape'],
    ['$[99999999999999999999]', 'out of range'],
    ['$..a..b..c..d..e', "'..' segments"],
  ])('%j is rejected (%s)', (path, reason) => {
    expect(() => compileJsonPath(path)).toThrow(JsonPathSyntaxError);
    expect(() => compileJsonPath(path)).toThrow(reason);
  });

  it('names the position', () => {
    try {
      compileJsonPath('$.a[?(@.b ==)]');
      throw new Error('no error');
    } catch (err) {
      expect(err).toBeInstanceOf(JsonPathSyntaxError);
      expect((err as JsonPathSyntaxError).position).toBe(12);
    }
  });

  it('rejects overlong and over-nested expressions', () => {
    expect(() => compileJsonPath('$' + '.a'.repeat(600))).toThrow('longer than 1000');
    expect(() => compileJsonPath('$[?(' + '!'.repeat(40) + '@.a)]')).toThrow('nested deeper');
    expect(() => compileJsonPath('$[?(' + '('.repeat(40) + '@.a' + ')'.repeat(40) + ')]')).toThrow('nested deeper');
  });
});

describe('JSONPath budget', () => {
  const wide = { a: Array.from({ length: 200 }, (_, i) => ({ b: Array.from({ length: 200 }, () => ({ c: i })) })) };

  it('stops a pathological query instead of hanging', () => {
    const path = compileJsonPath('$..*..*..*..*');
    expect(() => path.query(wide)).toThrow(BudgetExceededError);
    expect(path.matches(wide)).toBe(false);
  });

  it('honours a smaller budget', () => {
    const path = compileJsonPath('$.a[*].b[*].c');
    expect(path.query(wide).length).toBe(40_000);
    expect(() => path.query(wide, new Budget(1000))).toThrow(BudgetExceededError);
  });

  it('refuses to walk documents nested deeper than the limit', () => {
    const deep = JSON.parse('['.repeat(5000) + '1' + ']'.repeat(5000)) as unknown;
    expect(compileJsonPath('$..*').matches(deep)).toBe(false);
    expect(compileJsonPath('$[0][0][0]').matches(deep)).toBe(true);
  });
});
