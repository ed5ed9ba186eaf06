import { buildFilterDocument } from '../filter-document';
import { compileFilter } from '../flow-filter';
import { compileJsonPath } from './compile-jsonpath';

const doc = buildFilterDocument({
  type: 'push',
  ingesterId: 'ing_1',
  provider: 'github',
  headers: { 'X-Env': 'prod' },
  query: null,
  contentType: 'application/json',
  body: Buffer.from(JSON.stringify({ 'X-Env': 'body', 'Order-Id': 'o1', headers: { 'X-A': 'a' } })),
});
const matches = (jsonpath: string): boolean => compileFilter({ jsonpath }).matches(doc);

describe('header names in JSONPath, however the headers object is reached', () => {
  it.each([
    "$[?(@.headers['X-Env'] == 'prod')]", // @ is the event
    "$.headers[?(@['X-Env'] == 'prod')]", // @ is the headers object
    '$.headers[?(@.X-Env)]',
    "$[?(@.headers[?(@['X-Env'] == 'prod')])]", // nested filters
    "$['headers'][?(!(@['X-ENV'] != 'prod'))]",
    "$.*[?(@['X-Env'] == 'prod')]",
  ])('%s matches X-Env: prod', (path) => {
    expect(matches(path)).toBe(true);
  });

  it('lowers only names selected from the headers object', () => {
    const q = compileJsonPath("$..['X-Env']", { filterDocument: true });
    expect(q.query(doc)).toEqual(['prod', 'body']);
    expect(matches("$.body[?(@['Order-Id'] == 'o1')]")).toBe(true);
    expect(matches("$[?(@.body['Order-Id'] == 'o1')]")).toBe(true);
    expect(matches("$[?(@.body['order-id'] == 'o1')]")).toBe(false);
    expect(matches("$.body.headers[?(@['x-a'] == 'a')]")).toBe(false);
    expect(matches("$.body.headers[?(@['X-A'] == 'a')]")).toBe(true);
    // Outside a filter document, names are always as written.
    expect(compileJsonPath("$..['X-Env']").query(doc)).toEqual(['body']);
  });
});
