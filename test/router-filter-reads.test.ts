// What a compiled filter tells the router before it runs: whether it reads the stored
// request (headers, query, body), its event-type test alone, and a budget shared with the
// other filters run on the same event.
import { Budget, buildFilterDocument, compileFilter } from '../packages/filters/src';

describe('compileFilter: readsPayload', () => {
  it.each([
    [{}, false],
    [{ event_types: ['invoice.*'] }, false],
    [{ match: { type: 'invoice.paid', 'source.provider': 'stripe' } }, false],
    [{ match: { $or: [{ type: 'a' }, { $not: { 'source.ingester_id': 'x' } }] } }, false],
    [{ match: { source: { provider: 'stripe' } } }, false],
    [{ jsonpath: '$.type' }, false],
    [{ jsonpath: ["$.source[?(@.provider == 'stripe')]", "$['type', 'source']"] }, false],
    [{ match: { 'body.a': 1 } }, true],
    [{ match: { 'headers.x-env': 'prod' } }, true],
    [{ match: { 'query.env': 'prod' } }, true],
    [{ match: { $or: [{ type: 'a' }, { 'body.a': 1 }] } }, true],
    [{ match: { $not: { 'headers.x': 'y' } } }, true],
    [{ event_types: ['a'], match: { body: { a: 1 } } }, true],
    [{ jsonpath: '$.body.a' }, true],
    [{ jsonpath: '$..sku' }, true],
    [{ jsonpath: '$.*' }, true],
    [{ jsonpath: '$[?(@.type)]' }, true],
    [{ jsonpath: '$.source[?($.body.a == 1)]' }, true],
    [{ jsonpath: ['$.type', '$.headers.x'] }, true],
  ])('%j → %s', (filter, reads) => {
    const c = compileFilter(filter);
    expect(c.valid).toBe(true);
    expect(c.readsPayload).toBe(reads);
  });

  it('an invalid filter reads nothing and accepts no type', () => {
    const c = compileFilter({ match: { 'body.a': { $regex: '.*' } } });
    expect(c.valid).toBe(false);
    expect(c.readsPayload).toBe(false);
    expect(c.acceptsType('x')).toBe(false);
  });
});

describe('compileFilter: acceptsType', () => {
  it('is the event_types test alone, without a document', () => {
    expect(compileFilter({ event_types: ['invoice.*'], match: { 'body.a': 1 } }).acceptsType('invoice.paid')).toBe(true);
    expect(compileFilter({ event_types: ['invoice.*'], match: { 'body.a': 1 } }).acceptsType('charge.x')).toBe(false);
    expect(compileFilter({ event_types: ['invoice.*'] }).acceptsType(null)).toBe(false);
    expect(compileFilter({ match: { 'body.a': 1 } }).acceptsType(null)).toBe(true);
    expect(compileFilter(null).acceptsType('x')).toBe(true);
  });
});

describe('compileFilter: a budget shared by the filters of one event', () => {
  const body = Buffer.from(JSON.stringify({ items: Array.from({ length: 30_000 }, (_, i) => ({ v: i === 29_999 ? 5 : 1 })) }));
  const doc = buildFilterDocument({ type: 'x', ingesterId: 'i', provider: 'generic', headers: {}, query: null, contentType: 'application/json', body });
  const heavy = compileFilter({ match: { 'body.items.v': 5 } });

  it('is charged with every step, and once spent no filter matches', () => {
    const shared = new Budget(150_000);
    expect(heavy.matches(doc, shared)).toBe(true);
    const used = shared.used;
    expect(used).toBeGreaterThan(50_000);
    expect(heavy.matches(doc, shared)).toBe(true);
    expect(shared.used).toBe(2 * used);
    expect(heavy.matches(doc, shared)).toBe(false);
    expect(shared.used).toBeGreaterThan(shared.maxSteps);
    // Each filter alone still has its own budget.
    expect(heavy.matches(doc)).toBe(true);
  });
});
