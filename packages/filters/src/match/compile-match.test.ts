import { Budget } from '../budget';
import { compileMatch } from './compile-match';

const doc = {
  type: 'invoice.paid',
  source: { ingester_id: 'ing_1', provider: 'stripe' },
  headers: { 'x-foo': 'bar', 'user-agent': 'Stripe/1.0' },
  query: { tag: ['a', 'b'], page: '2' },
  body: {
    id: 'evt_123',
    livemode: false,
    data: { amount: 1500, currency: 'usd', status: 'paid', note: null, created: '2026-11-21T10:00:00Z' },
    tags: ['vip', 'eu'],
    lines: [
      { sku: 'A-1', qty: 2, price: { amount: 500 } },
      { sku: 'B-7', qty: 1, price: { amount: 500 } },
    ],
    matrix: [[1, 2], [3]],
  },
};

function matches(tree: unknown, target: unknown = doc): boolean {
  const { predicate, errors } = compileMatch(tree, 'filter.match');
  expect(errors).toEqual([]);
  return predicate(target, new Budget());
}

function errorsOf(tree: unknown): Array<{ field: string; message: string }> {
  return compileMatch(tree, 'filter.match').errors;
}

describe('match operators', () => {
  it.each<[string, unknown, boolean]>([
    ['plain value is $eq', { type: 'invoice.paid' }, true],
    ['plain value mismatch', { type: 'invoice.failed' }, false],
    ['$eq number', { 'body.data.amount': { $eq: 1500 } }, true],
    ['$eq does not coerce', { 'body.data.amount': { $eq: '1500' } }, false],
    ['$eq null on a null field', { 'body.data.note': { $eq: null } }, true],
    ['$eq null on a missing field', { 'body.data.missing': null }, false],
    ['$eq object (deep)', { 'body.data': { $eq: { amount: 1500, currency: 'usd', status: 'paid', note: null, created: '2026-11-21T10:00:00Z' } } }, true],
    ['$eq whole array', { 'body.tags': { $eq: ['vip', 'eu'] } }, true],
    ['$eq boolean', { 'body.livemode': false }, true],
    ['$neq', { 'body.data.currency': { $neq: 'eur' } }, true],
    ['$neq equal', { 'body.data.currency': { $neq: 'usd' } }, false],
    ['$neq missing field matches', { 'body.nope': { $neq: 'x' } }, true],
    ['$in', { 'body.data.currency': { $in: ['eur', 'usd'] } }, true],
    ['$in none', { 'body.data.currency': { $in: ['eur', 'gbp'] } }, false],
    ['$in missing', { 'body.nope': { $in: ['x'] } }, false],
    ['$nin', { 'body.data.currency': { $nin: ['eur', 'gbp'] } }, true],
    ['$nin listed', { 'body.data.currency': { $nin: ['usd'] } }, false],
    ['$nin missing field matches', { 'body.nope': { $nin: ['x'] } }, true],
    ['$gt', { 'body.data.amount': { $gt: 1499 } }, true],
    ['$gt equal', { 'body.data.amount': { $gt: 1500 } }, false],
    ['$gte', { 'body.data.amount': { $gte: 1500 } }, true],
    ['$lt', { 'body.data.amount': { $lt: 1501 } }, true],
    ['$lt equal', { 'body.data.amount': { $lt: 1500 } }, false],
    ['$lte', { 'body.data.amount': { $lte: 1500 } }, true],
    ['range', { 'body.data.amount': { $gte: 1000, $lt: 2000 } }, true],
    ['range miss', { 'body.data.amount': { $gte: 1000, $lt: 1200 } }, false],
    ['$gt string (ISO time)', { 'body.data.created': { $gt: '2026-01-01' } }, true],
    ['$gt number vs string never matches', { 'body.data.currency': { $gt: 5 } }, false],
    ['$gt missing', { 'body.nope': { $gt: 0 } }, false],
    ['$exists true', { 'body.data.note': { $exists: true } }, true],
    ['$exists true missing', { 'body.data.nope': { $exists: true } }, false],
    ['$exists false missing', { 'body.data.nope': { $exists: false } }, true],
    ['$exists false present', { 'body.data.amount': { $exists: false } }, false],
    ['$startsWith', { type: { $startsWith: 'invoice.' } }, true],
    ['$startsWith miss', { type: { $startsWith: 'charge.' } }, false],
    ['$endsWith', { type: { $endsWith: '.paid' } }, true],
    ['$endsWith non-string', { 'body.data.amount': { $endsWith: '00' } }, false],
    ['$startsWith missing', { 'body.nope': { $startsWith: '' } }, false],
    ['headers', { 'headers.x-foo': 'bar', 'headers.user-agent': { $startsWith: 'Stripe/' } }, true],
    ['source', { 'source.provider': 'stripe' }, true],
    ['query repeated', { 'query.tag': 'b' }, true],
  ])('%s', (_name, tree, expected) => {
    expect(matches(tree)).toBe(expected);
  });
});

describe('arrays', () => {
  it.each<[string, unknown, boolean]>([
    ['any element equals', { 'body.tags': 'eu' }, true],
    ['no element equals', { 'body.tags': 'us' }, false],
    ['$in over elements', { 'body.tags': { $in: ['us', 'vip'] } }, true],
    ['$nin over elements', { 'body.tags': { $nin: ['vip'] } }, false],
    ['$startsWith over elements', { 'body.tags': { $startsWith: 'v' } }, true],
    ['index segment', { 'body.tags.0': 'vip' }, true],
    ['index out of range', { 'body.tags.5': { $exists: true } }, false],
    ['path through an array of objects', { 'body.lines.sku': 'B-7' }, true],
    ['deeper through an array', { 'body.lines.price.amount': { $gte: 500 } }, true],
    ['indexed object element', { 'body.lines.1.sku': 'A-1' }, false],
    ['$exists through array', { 'body.lines.qty': { $exists: true } }, true],
    ['nested array elements are one level', { 'body.matrix': 3 }, false],
    ['nested array element equals inner array', { 'body.matrix': [3] }, true],
    ['nested tree on an array matches any element', { body: { lines: { sku: 'A-1', qty: 2 } } }, true],
    ['nested tree needs one element to match all', { body: { lines: { sku: 'A-1', qty: 1 } } }, false],
    ['$gt on any element', { 'body.lines.qty': { $gt: 1 } }, true],
    ['$lt on all elements fails', { 'body.lines.qty': { $lt: 1 } }, false],
  ])('%s', (_name, tree, expected) => {
    expect(matches(tree)).toBe(expected);
  });
});

describe('nested (Hookdeck style) and logical combinations', () => {
  it.each<[string, unknown, boolean]>([
    ['nested objects', { body: { data: { status: 'paid', amount: { $gt: 1000 } } } }, true],
    ['nested mismatch', { body: { data: { status: 'open' } } }, false],
    ['nested on a scalar', { type: { x: 1 } }, false],
    ['nested on missing', { body: { nope: { x: 1 } } }, false],
    ['empty tree', {}, true],
    ['implicit and', { type: 'invoice.paid', 'body.data.currency': 'eur' }, false],
    ['$and', { $and: [{ type: 'invoice.paid' }, { 'body.data.currency': 'usd' }] }, true],
    ['$and one fails', { $and: [{ type: 'invoice.paid' }, { 'body.data.currency': 'eur' }] }, false],
    ['$or', { $or: [{ type: 'x' }, { 'body.data.currency': 'usd' }] }, true],
    ['$or none', { $or: [{ type: 'x' }, { 'body.data.currency': 'eur' }] }, false],
    ['$not', { $not: { type: 'x' } }, true],
    ['$not of a match', { $not: { type: 'invoice.paid' } }, false],
    ['$not of a missing field', { $not: { 'body.nope': 1 } }, true],
    ['field $not', { 'body.data.amount': { $not: { $gt: 2000 } } }, true],
    ['field $not plain', { 'body.data.currency': { $not: 'usd' } }, false],
    ['field $or', { 'body.data.currency': { $or: ['eur', { $startsWith: 'us' }] } }, true],
    ['field $and', { 'body.data.amount': { $and: [{ $gt: 1 }, { $lt: 2 }] } }, false],
    [
      'deep combination',
      { $or: [{ $and: [{ type: { $startsWith: 'charge.' } }, { 'body.data.amount': { $gt: 0 } }] }, { $not: { $or: [{ 'body.livemode': true }, { 'headers.x-foo': { $neq: 'bar' } }] } }] },
      true,
    ],
    ['nested inside $or inside nested', { body: { $or: [{ id: 'x' }, { data: { status: 'paid' } }] } }, true],
  ])('%s', (_name, tree, expected) => {
    expect(matches(tree)).toBe(expected);
  });

  it('does not reach inherited properties', () => {
    expect(matches({ 'body.constructor': { $exists: true } })).toBe(false);
    expect(matches({ 'body.tags.length': 2 })).toBe(false);
  });
});

describe('match validation', () => {
  it.each<[string, unknown, { field: string; message: string }]>([
    ['unknown field operator', { 'body.amount': { $regex: 'x' } }, { field: 'filter.match.body.amount.$regex', message: expect.stringContaining("unknown operator '$regex'") }],
    ['field operator at tree level', { $eq: 1 }, { field: 'filter.match.$eq', message: expect.stringContaining('applies to a field') }],
    ['unknown tree operator', { $nor: [] }, { field: 'filter.match.$nor', message: expect.stringContaining("unknown operator '$nor'") }],
    ['$gte wants number or string', { $or: [{ type: 'a' }, { 'body.amount': { $gte: true } }] }, { field: 'filter.match.$or[1].body.amount.$gte', message: 'must be a number or a string' }],
    ['$in wants array', { type: { $in: 'a' } }, { field: 'filter.match.type.$in', message: 'must be an array of values' }],
    ['$nin wants array', { type: { $nin: 1 } }, { field: 'filter.match.type.$nin', message: 'must be an array of values' }],
    ['$exists wants boolean', { type: { $exists: 1 } }, { field: 'filter.match.type.$exists', message: 'must be true or false' }],
    ['$startsWith wants string', { type: { $startsWith: 1 } }, { field: 'filter.match.type.$startsWith', message: 'must be a string' }],
    ['$endsWith wants string', { type: { $endsWith: null } }, { field: 'filter.match.type.$endsWith', message: 'must be a string' }],
    ['$or wants array', { $or: { type: 'a' } }, { field: 'filter.match.$or', message: 'must be a non-empty array' }],
    ['$and wants non-empty', { $and: [] }, { field: 'filter.match.$and', message: 'must be a non-empty array' }],
    ['$and items are trees', { $and: ['x'] }, { field: 'filter.match.$and[0]', message: 'must be an object of field conditions' }],
    ['$not wants tree', { $not: 3 }, { field: 'filter.match.$not', message: 'must be an object of field conditions' }],
    ['mixed keys', { body: { $eq: 1, x: 2 } }, { field: 'filter.match.body', message: expect.stringContaining('mixes operators') }],
    ['empty path segment', { 'body..x': 1 }, { field: 'filter.match.body..x', message: 'field path has an empty segment' }],
    ['not an object', ['a'], { field: 'filter.match', message: 'must be an object of field conditions' }],
    // 1e400 parses to Infinity, which JSON would store as null: {"$gt": null}, {"body.amount": null}.
    ['$gt non-finite', JSON.parse('{"body.amount":{"$gt":1e400}}'), { field: 'filter.match.body.amount.$gt', message: expect.stringContaining('must be a finite number') }],
    ['$lte non-finite', { 'body.amount': { $lte: -Infinity } }, { field: 'filter.match.body.amount.$lte', message: expect.stringContaining('must be a finite number') }],
    ['plain value non-finite', JSON.parse('{"body.amount":1e400}'), { field: 'filter.match.body.amount', message: expect.stringContaining('must be a finite number') }],
    ['nested value non-finite', JSON.parse('{"body":{"data":{"amount":-1e400}}}'), { field: 'filter.match.body.data.amount', message: expect.stringContaining('must be a finite number') }],
    ['$in item non-finite', JSON.parse('{"body.amount":{"$in":[1,1e400]}}'), { field: 'filter.match.body.amount.$in', message: expect.stringContaining('must be a finite number') }],
    ['$neq deep non-finite', { 'body.x': { $not: { $neq: { a: [NaN] } } } }, { field: 'filter.match.body.x.$not.$neq', message: expect.stringContaining('must be a finite number') }],
  ])('%s', (_name, tree, expected) => {
    expect(errorsOf(tree)).toContainEqual(expected);
  });

  it('accepts a valid nested tree', () => {
    expect(errorsOf({ body: { data: { amount: { $not: { $in: [{ x: 1 }, 'y'] } } } } })).toEqual([]);
  });

  it('reports several errors at once', () => {
    expect(errorsOf({ a: { $gt: [] }, b: { $foo: 1 } }).map((e) => e.field)).toEqual(['filter.match.a.$gt', 'filter.match.b.$foo']);
  });

  it('rejects trees nested too deep', () => {
    let tree: unknown = { type: 'x' };
    for (let i = 0; i < 40; i++) tree = { $not: tree };
    const errors = errorsOf(tree);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toContain('nested deeper than 32');
    let nested: unknown = 1;
    for (let i = 0; i < 40; i++) nested = { a: nested };
    expect(errorsOf({ body: nested })[0]!.message).toContain('nested deeper');
  });

  it('rejects oversized trees and operands', () => {
    expect(errorsOf({ type: { $in: Array.from({ length: 3000 }, (_, i) => i) } })[0]!.message).toContain('more than 2000 nodes');
    const wide = Object.fromEntries(Array.from({ length: 2500 }, (_, i) => [`f${i}`, 1]));
    expect(errorsOf(wide)[0]!.message).toContain('more than 2000 nodes');
  });

  it('an invalid tree never matches', () => {
    const { predicate } = compileMatch({ type: { $bogus: 1 } }, 'm');
    expect(predicate(doc, new Budget())).toBe(false);
  });
});

describe('match budget', () => {
  it('gives up on a huge fan-out instead of hanging', () => {
    const big = { body: { rows: Array.from({ length: 400 }, () => ({ cells: Array.from({ length: 400 }, (_, j) => ({ v: j })) })) } };
    const { predicate } = compileMatch({ 'body.rows.cells.v': -1 }, 'm');
    expect(() => predicate(big, new Budget())).toThrow('budget exceeded');
    expect(predicate({ body: { rows: [{ cells: [{ v: -1 }] }] } }, new Budget())).toBe(true);
  });
});
