import { buildFilterDocument } from './filter-document';
import { compileFilter, matchesFilter, validateFilter } from './flow-filter';
import type { FilterDocument, FlowFilter } from './types';

const doc: FilterDocument = {
  type: 'invoice.paid',
  source: { ingester_id: 'ing_1', provider: 'stripe' },
  headers: { 'x-foo': 'bar' },
  query: {},
  body: { data: { amount: 1500, items: [{ sku: 'a', qty: 3 }] } },
};

describe('matchesFilter', () => {
  it.each<[string, FlowFilter, boolean]>([
    ['empty filter', {}, true],
    ['exact event type', { event_types: ['invoice.paid'] }, true],
    ['other event type', { event_types: ['invoice.failed', 'charge.succeeded'] }, false],
    ['wildcard event type', { event_types: ['charge.*', 'invoice.*'] }, true],
    ['wildcard other prefix', { event_types: ['invoice.p*'] }, true],
    ['wildcard does not match a shorter type', { event_types: ['invoice.paid.*'] }, false],
    ['star matches all', { event_types: ['*'] }, true],
    ['empty list constrains nothing', { event_types: [] }, true],
    ['jsonpath selects', { jsonpath: '$.body[?(@.data.amount > 10)]' }, true],
    ['jsonpath selects nothing', { jsonpath: '$.body.data[?(@.amount > 10000)]' }, false],
    ['jsonpath header', { jsonpath: "$.headers['x-foo']" }, true],
    ['jsonpath list: all must select', { jsonpath: ['$.body.data.items[?(@.qty > 2)]', '$.headers.x-bar'] }, false],
    ['jsonpath list all select', { jsonpath: ['$.body.data.items[?(@.qty > 2)]', '$.source[?(@.provider == "stripe")]'] }, true],
    ['match', { match: { 'body.data.amount': { $gte: 100 }, type: 'invoice.paid' } }, true],
    ['match fails', { match: { 'body.data.amount': { $gte: 10000 } } }, false],
    ['all parts', { event_types: ['invoice.*'], jsonpath: '$.body.data', match: { 'headers.x-foo': 'bar' } }, true],
    ['one part fails', { event_types: ['invoice.*'], jsonpath: '$.body.data', match: { 'headers.x-foo': 'baz' } }, false],
    ['invalid filter never matches', { match: { type: { $regex: '.*' } } }, false],
  ])('%s', (_name, filter, expected) => {
    expect(matchesFilter(filter, doc)).toBe(expected);
  });

  it('typed patterns need an event type; "*" does not', () => {
    const untyped = { ...doc, type: null };
    expect(matchesFilter({ event_types: ['invoice.*'] }, untyped)).toBe(false);
    expect(matchesFilter({ event_types: ['*'] }, untyped)).toBe(true);
  });

  it('treats null or undefined filters as match-all and non-objects as invalid', () => {
    expect(matchesFilter(null as unknown as FlowFilter, doc)).toBe(true);
    expect(matchesFilter('x' as unknown as FlowFilter, doc)).toBe(false);
  });

  it('a pathological filter on a large payload returns false instead of hanging', () => {
    const big: FilterDocument = { ...doc, body: { rows: Array.from({ length: 300 }, () => ({ cells: Array.from({ length: 300 }, (_, i) => ({ v: i })) })) } };
    expect(matchesFilter({ jsonpath: '$..*..*..*..*' }, big)).toBe(false);
    expect(matchesFilter({ match: { 'body.rows.cells.v': 999 } }, big)).toBe(false);
    expect(matchesFilter({ jsonpath: '$.body.rows[0].cells[?(@.v == 299)]' }, big)).toBe(true);
  });

  it('shares one budget across the parts of a filter', () => {
    const big: FilterDocument = { ...doc, body: { rows: Array.from({ length: 200 }, () => ({ cells: Array.from({ length: 200 }, (_, i) => ({ v: i })) })) } };
    const heavy = '$.body.rows[*].cells[*].v';
    expect(compileFilter({ jsonpath: heavy }).matches(big)).toBe(true);
    expect(compileFilter({ jsonpath: [heavy, heavy] }).matches(big)).toBe(false);
  });

  it('matches header names whatever their case, as HTTP does (the document holds them in lower case)', () => {
    const gh = buildFilterDocument({ type: 'push', ingesterId: 'ing_9', provider: 'github', headers: { 'X-GitHub-Event': 'push', 'X-Env': 'prod' }, query: null, contentType: null, body: null });
    for (const filter of [
      { match: { 'headers.X-GitHub-Event': 'push' } },
      { match: { headers: { 'X-GitHub-Event': 'push', 'x-env': 'prod' } } },
      { match: { $or: [{ 'headers.X-Nope': 'x' }, { 'headers.X-Env': { $in: ['prod', 'staging'] } }] } },
      { match: { 'headers.X-Signature': { $exists: false }, $not: { 'headers.X-GitHub-Event': 'pull_request' } } },
      { jsonpath: "$.headers['X-GitHub-Event']" },
      { jsonpath: '$.headers.X-GitHub-Event' },
      { jsonpath: "$[?($.headers['X-Env'] == 'prod')]" },
    ] satisfies FlowFilter[]) {
      expect([filter, matchesFilter(filter, gh)]).toEqual([filter, true]);
    }
    expect(matchesFilter({ match: { 'headers.X-GitHub-Event': { $exists: false } } }, gh)).toBe(false);
    expect(matchesFilter({ match: { 'headers.X-GitHub-Event': 'PUSH' } }, gh)).toBe(false); // values keep their case
    // Only header names: body fields and the names of other parts stay case-sensitive.
    expect(matchesFilter({ match: { 'body.Ref': 'x' } }, { ...gh, body: { ref: 'x' } })).toBe(false);
    expect(matchesFilter({ jsonpath: '$.body.Ref' }, { ...gh, body: { ref: 'x' } })).toBe(false);
    expect(matchesFilter({ match: { body: { headers: { 'X-A': 1 } } } }, { ...gh, body: { headers: { 'x-a': 1 } } })).toBe(false);
  });

  it('works on a document built from raw bytes', () => {
    const built = buildFilterDocument({
      type: 'push',
      ingesterId: 'ing_9',
      provider: 'github',
      headers: { 'X-GitHub-Event': 'push' },
      query: '?env=prod',
      contentType: 'application/json',
      body: Buffer.from('{"ref":"refs/heads/main","commits":[{"id":"c1"}]}'),
    });
    expect(matchesFilter({ match: { 'headers.x-github-event': 'push', 'query.env': 'prod', 'body.ref': { $endsWith: '/main' }, 'source.provider': 'github' }, jsonpath: '$.body.commits[0].id' }, built)).toBe(true);
  });
});

describe('validateFilter', () => {
  it('accepts valid filters', () => {
    expect(validateFilter({})).toEqual([]);
    expect(validateFilter(undefined)).toEqual([]);
    expect(validateFilter({ event_types: ['a.*', 'b'], jsonpath: ['$.body.a', '$..b[?(@.c)]'], match: { $or: [{ type: 'a' }, { 'body.x': { $gt: 1 } }] } })).toEqual([]);
  });

  it.each<[string, unknown, { field: string; message: unknown }]>([
    ['not an object', 'x', { field: 'filter', message: expect.stringContaining('must be an object') }],
    ['unknown key', { types: ['a'] }, { field: 'filter.types', message: expect.stringContaining('not a filter field') }],
    ['event_types not array', { event_types: 'a' }, { field: 'filter.event_types', message: 'must be an array of event types' }],
    ['event_types empty string', { event_types: ['a', ''] }, { field: 'filter.event_types[1]', message: expect.stringContaining('non-empty string') }],
    ['event_types inner star', { event_types: ['a*.b'] }, { field: 'filter.event_types[0]', message: expect.stringContaining("'*' is only allowed at the end") }],
    ['too many event types', { event_types: Array.from({ length: 101 }, (_, i) => `t${i}`) }, { field: 'filter.event_types', message: expect.stringContaining('at most 100') }],
    ['jsonpath syntax', { jsonpath: '$.body[' }, { field: 'filter.jsonpath', message: expect.stringContaining('invalid JSONPath at position 7') }],
    ['jsonpath list syntax', { jsonpath: ['$.a', 'body.x'] }, { field: 'filter.jsonpath[1]', message: expect.stringContaining("must start with '$'") }],
    ['jsonpath not a string', { jsonpath: ['$.a', 3] }, { field: 'filter.jsonpath[1]', message: 'must be a string' }],
    ['jsonpath wrong type', { jsonpath: { a: 1 } }, { field: 'filter.jsonpath', message: expect.stringContaining('JSONPath string') }],
    ['jsonpath too long', { jsonpath: '$' + '.a'.repeat(600) }, { field: 'filter.jsonpath', message: expect.stringContaining('longer than 1000') }],
    ['absurd jsonpath', { jsonpath: '$..a..b..c..d..e..f' }, { field: 'filter.jsonpath', message: expect.stringContaining("'..' segments") }],
    ['too many jsonpaths', { jsonpath: Array.from({ length: 21 }, () => '$') }, { field: 'filter.jsonpath', message: expect.stringContaining('at most 20') }],
    ['jsonpath non-finite literal', { jsonpath: '$[?(@.body.amount > 1e400)]' }, { field: 'filter.jsonpath', message: expect.stringContaining('out of range') }],
    ['jsonpath non-finite literal, nested, in a list', { jsonpath: ['$.a', '$[?(!(-1E+999 == @.a) && @.b)]'] }, { field: 'filter.jsonpath[1]', message: expect.stringContaining('must be finite') }],
    ['match non-finite', JSON.parse('{"match":{"body.amount":{"$gt":1e400}}}'), { field: 'filter.match.body.amount.$gt', message: expect.stringContaining('must be a finite number') }],
    ['match operator', { match: { $or: [{ type: 'a' }, { 'body.amount': { $gte: {} } }] } }, { field: 'filter.match.$or[1].body.amount.$gte', message: 'must be a number or a string' }],
  ])('%s', (_name, filter, expected) => {
    expect(validateFilter(filter)).toContainEqual(expected);
  });

  it('uses the given field prefix', () => {
    expect(validateFilter({ match: { a: { $x: 1 } } }, 'flows[0].filter')[0]!.field).toBe('flows[0].filter.match.a.$x');
  });

  it('a stored filter written before the finite-number rule keeps its meaning when compiled (the router)', () => {
    const c = compileFilter({ jsonpath: '$[?(@.body.amount < 1e400)]' });
    expect(c.valid).toBe(true);
    expect(c.matches({ ...doc, body: { amount: 5 } })).toBe(true);
    expect(validateFilter({ jsonpath: '$[?(@.body.amount < 1e400)]' })).toHaveLength(1);
  });

  it('compileFilter reports the same errors and fails closed', () => {
    const c = compileFilter({ jsonpath: '$[' });
    expect(c.valid).toBe(false);
    expect(c.errors).toEqual(validateFilter({ jsonpath: '$[' }));
    expect(c.matches(doc)).toBe(false);
  });
});
