// Comparing strings costs steps by their length: one step per comparison, plus one per KiB
// of the shorter string. Before, two 100 KB strings compared once per element of an array
// cost one step each, as two short ones do: a filter ran ~30× longer on the same budget.
import { Budget } from './budget';
import { compileFilter } from './flow-filter';
import { compareValues, deepEqual } from './json-values';
import { compileJsonPath } from './jsonpath/compile-jsonpath';
import { LIMITS } from './limits';
import { compileMatch } from './match/compile-match';
import type { FilterDocument } from './types';

const KIB = 1024;
/** Two strings of 100 KiB that differ only in their last character: read to the end. */
const A = 'x'.repeat(100 * KIB - 1) + 'a';
const B = 'x'.repeat(100 * KIB - 1) + 'b';

const docOf = (body: unknown): FilterDocument => ({ type: 't', source: { ingester_id: 'i', provider: 'generic' }, headers: {}, query: {}, body });

function stepsOf(run: (budget: Budget) => unknown): number {
  const budget = new Budget(1e9);
  run(budget);
  return budget.used;
}

describe('string comparisons are charged by length', () => {
  it('deepEqual and compareValues: one more step per KiB of the shorter string', () => {
    expect(stepsOf((b) => deepEqual(A, B, b))).toBe(1 + 100);
    expect(stepsOf((b) => deepEqual(A, A.slice(0, 10 * KIB), b))).toBe(1 + 10);
    expect(stepsOf((b) => deepEqual('a', 'b', b))).toBe(1);
    expect(stepsOf((b) => deepEqual([A], [B], b))).toBe(1 + 1 + 100);
    expect(stepsOf((b) => compareValues(A, B, b))).toBe(100);
    expect(stepsOf((b) => compareValues('a', 'b', b))).toBe(0);
    expect(stepsOf((b) => compareValues(1, 2, b))).toBe(0);
  });

  it.each([
    ['$eq', { 'body.s': B }],
    ['$neq', { 'body.s': { $neq: B } }],
    ['$in', { 'body.s': { $in: [B] } }],
    ['$nin', { 'body.s': { $nin: [B] } }],
    ['$gt', { 'body.s': { $gt: B } }],
    ['$gte', { 'body.s': { $gte: B } }],
    ['$lt', { 'body.s': { $lt: B } }],
    ['$lte', { 'body.s': { $lte: B } }],
    ['$startsWith', { 'body.s': { $startsWith: B } }],
    ['$endsWith', { 'body.s': { $endsWith: B } }],
  ])('match %s costs 100 steps more against a 100 KiB value than against a short one', (_op, tree) => {
    const { predicate, errors } = compileMatch(tree, 'filter.match');
    expect(errors).toEqual([]);
    const long = stepsOf((b) => predicate(docOf({ s: A }), b));
    const short = stepsOf((b) => predicate(docOf({ s: 'a' }), b));
    expect(long - short).toBe(100);
  });

  it.each(['==', '!=', '<', '<=', '>', '>='])('JSONPath %s costs 100 steps more between 100 KiB strings than between short ones', (op) => {
    const path = compileJsonPath(`$[?($.body.a ${op} $.body.b)]`, { filterDocument: true });
    const long = stepsOf((b) => path.query(docOf({ a: A, b: B }), b));
    const short = stepsOf((b) => path.query(docOf({ a: 'a', b: 'b' }), b));
    expect(long - short).toBe(100);
  });

  it('a filter comparing long strings once per array element spends its budget, where the same filter on short strings does not', () => {
    const arr = new Array(2_000).fill(0);
    const filter = compileFilter({ jsonpath: ['$.body.arr[?($.body.a < $.body.b)]'] });
    const shortDoc = docOf({ a: 'a', b: 'b', arr });
    const longDoc = docOf({ a: A, b: B, arr });

    const short = new Budget(200_000);
    expect(filter.matches(shortDoc, short)).toBe(true);
    expect(short.used).toBeLessThan(20_000);

    // 2,000 comparisons of 100 KiB strings: more than the filter's own 100,000 steps.
    const long = new Budget(200_000);
    expect(filter.matches(longDoc, long)).toBe(false);
    expect(long.used).toBeGreaterThan(100_000);
    // An event budget the filters share: spent, as the router reads it (route-events.ts).
    const event = new Budget(200_000);
    for (let i = 0; i < 3; i++) expect(filter.matches(longDoc, event)).toBe(false);
    expect(event.used).toBeGreaterThan(event.maxSteps);
  });

  it('match: $startsWith with a long operand over a long array spends the budget', () => {
    const items = new Array(2_000).fill(A);
    const filter = compileFilter({ match: { 'body.items': { $startsWith: B } } });
    expect(filter.matches(docOf({ items: new Array(2_000).fill('a') }))).toBe(false);
    // The event's budget is large: the filter's own (LIMITS.maxSteps) is what it spends.
    const budget = new Budget(1e9);
    expect(filter.matches(docOf({ items }), budget)).toBe(false);
    expect(budget.used).toBeGreaterThan(LIMITS.maxSteps);
    // Spent before the last item is reached: no match even where the last item would match.
    const withMatch = compileFilter({ match: { 'body.items': { $startsWith: A } } });
    expect(withMatch.matches(docOf({ items: [...new Array(1_999).fill(B), A] }))).toBe(false);
    expect(withMatch.matches(docOf({ items: [...new Array(1_999).fill('b'), A] }))).toBe(true);
  });
});
