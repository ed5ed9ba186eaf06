import type { FieldError } from '@hookline/errors';
import { isObject } from '../json-values';
import { LIMITS } from '../limits';
import * as ops from './field-operators';
import type { FieldPredicate, Predicate } from './field-operators';
import { resolveField } from './resolve-field';

/** A test of a whole document (or of a nested object, Hookdeck style). */
export type TreePredicate = Predicate<unknown>;

const NEVER = (): boolean => false;

/** JSON has no Infinity or NaN (`1e400` parses to Infinity and would be stored as null). */
const NOT_FINITE = 'must be a finite number; this one is out of range (JSON has no Infinity)';
/**
 * A number beyond ±(2^53−1) reaches the API already rounded (JSON.parse): 1234567890123456789
 * reads as 1234567890123456800, which cannot tell the id written from its neighbours.
 * Refused, on write and when a stored filter is compiled (the router: such a filter matches
 * nothing, rather than events of other ids), like a non-finite number.
 */
const notExact = (n: number): string =>
  `must be within ±9007199254740991 (2^53−1): a larger number is rounded when read (this one reads as ${String(n)}), so it cannot be matched exactly`;
const beyondSafe = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) > Number.MAX_SAFE_INTEGER;

/** Where a tree sits: the document itself, its `headers` object, or anything else. */
type Scope = 'root' | 'headers' | 'nested';

/**
 * Validates and compiles a `match` operator tree in one pass, so that what the API
 * accepts is exactly what the router runs. Errors name the field (`filter.match.$or[1].body.amount.$gte`).
 */
export function compileMatch(tree: unknown, field: string): { predicate: TreePredicate; errors: FieldError[] } {
  const c = new MatchCompiler();
  const predicate = c.tree(tree, field, 0);
  return { predicate: c.errors.length ? NEVER : predicate, errors: c.errors };
}

class MatchCompiler {
  readonly errors: FieldError[] = [];
  private nodes = 0;

  private error(field: string, message: string): typeof NEVER {
    const dup = this.errors.some((e) => e.field === field && e.message === message);
    if (!dup && this.errors.length < 50) this.errors.push({ field, message });
    return NEVER;
  }

  /** Counts a node and checks depth; false when a bound is passed (error recorded once). */
  private visit(field: string, depth: number): boolean {
    if (depth > LIMITS.maxTreeDepth) return this.error(field, `is nested deeper than ${LIMITS.maxTreeDepth} levels`), false;
    if (++this.nodes === LIMITS.maxTreeNodes + 1) this.error(field, `the match tree has more than ${LIMITS.maxTreeNodes} nodes`);
    return this.nodes <= LIMITS.maxTreeNodes;
  }

  /** `scope`: where `node` sits in the document (header names are matched in lower case). */
  tree(node: unknown, field: string, depth: number, scope: Scope = 'root'): TreePredicate {
    if (!this.visit(field, depth)) return NEVER;
    if (!isObject(node)) return this.error(field, 'must be an object of field conditions');
    const parts: TreePredicate[] = [];
    for (const [key, value] of Object.entries(node)) {
      const at = `${field}.${key}`;
      if (key === '$and' || key === '$or') {
        const items = this.list(value, at, depth, (v, f) => this.tree(v, f, depth + 2, scope));
        parts.push(key === '$and' ? ops.all(items) : ops.some(items));
      } else if (key === '$not') parts.push(ops.not(this.tree(value, at, depth + 1, scope)));
      else if (key.startsWith('$')) {
        const hint = (ops.FIELD_OPERATORS as readonly string[]).includes(key) ? `'${key}' applies to a field, e.g. {"type": {"${key}": …}}` : `unknown operator '${key}'; use one of ${ops.TREE_OPERATORS.join(', ')} here`;
        this.error(at, hint);
      } else {
        const segments = key.split('.');
        if (segments.some((s) => s === '')) {
          this.error(at, 'field path has an empty segment');
          continue;
        }
        // HTTP header names are case-insensitive and the document has them in lower case,
        // so `headers.X-GitHub-Event` means `headers.x-github-event`.
        const header = scope === 'headers' ? 0 : scope === 'root' && segments[0] === 'headers' ? 1 : -1;
        if (header >= 0 && segments[header] !== undefined) segments[header] = segments[header]!.toLowerCase();
        const inner: Scope = scope === 'root' && key === 'headers' ? 'headers' : 'nested';
        const cond = this.condition(value, at, depth + 1, inner);
        parts.push((ctx, budget) => cond(resolveField(ctx, segments, budget), budget));
      }
    }
    return ops.all(parts);
  }

  /** A non-empty array whose items compile with `each`. */
  private list<T>(value: unknown, field: string, depth: number, each: (v: unknown, f: string) => Predicate<T>): Predicate<T>[] {
    if (!Array.isArray(value) || value.length === 0) return [this.error(field, 'must be a non-empty array')];
    if (!this.visit(field, depth + 1)) return [NEVER];
    return value.map((v, i) => each(v, `${field}[${i}]`));
  }

  /** What a field must satisfy: a plain value ($eq), an operator object, or a nested tree (in `scope`). */
  condition(value: unknown, field: string, depth: number, scope: Scope = 'nested'): FieldPredicate {
    if (!isObject(value)) {
      this.literal(value, field, depth);
      return ops.eq(value);
    }
    const keys = Object.keys(value);
    const opKeys = keys.filter((k) => k.startsWith('$'));
    if (opKeys.length === 0) {
      // Hookdeck style: {"body": {"data": {"status": "paid"}}}; an array field matches
      // when one of its object elements does.
      if (!this.visit(field, depth)) return NEVER;
      const sub = this.tree(value, field, depth + 1, scope);
      return (values, budget) => values.some((v) => (Array.isArray(v) ? v.some((el) => isObject(el) && sub(el, budget)) : isObject(v) && sub(v, budget)));
    }
    if (opKeys.length !== keys.length) return this.error(field, 'mixes operators ($…) with field names; nest the fields or use $and');
    if (!this.visit(field, depth)) return NEVER;
    return ops.all(keys.map((op) => this.operator(op, value[op], `${field}.${op}`, depth + 1, scope)));
  }

  private operator(op: string, operand: unknown, field: string, depth: number, scope: Scope): FieldPredicate {
    switch (op) {
      case '$eq':
      case '$neq':
        this.literal(operand, field, depth);
        return op === '$eq' ? ops.eq(operand) : ops.not(ops.eq(operand));
      case '$in':
      case '$nin': {
        if (!Array.isArray(operand)) return this.error(field, 'must be an array of values');
        this.literal(operand, field, depth);
        return op === '$in' ? ops.inList(operand) : ops.not(ops.inList(operand));
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        if (typeof operand !== 'number' && typeof operand !== 'string') return this.error(field, 'must be a number or a string');
        if (typeof operand === 'number' && !Number.isFinite(operand)) return this.error(field, NOT_FINITE);
        if (beyondSafe(operand)) return this.error(field, notExact(operand));
        return ops.comparison(op, operand);
      case '$exists':
        if (typeof operand !== 'boolean') return this.error(field, 'must be true or false');
        return ops.exists(operand);
      case '$startsWith':
      case '$endsWith':
        if (typeof operand !== 'string') return this.error(field, 'must be a string');
        return ops.affix(op, operand);
      case '$not':
        return ops.not(this.condition(operand, field, depth, scope));
      case '$and':
      case '$or': {
        const items = this.list(operand, field, depth, (v, f) => this.condition(v, f, depth + 2, scope));
        return op === '$and' ? ops.all(items) : ops.some(items);
      }
      default:
        return this.error(field, `unknown operator '${op}'; supported: ${ops.FIELD_OPERATORS.join(', ')}`);
    }
  }

  /** Counts the nodes of a literal operand, bounding its size and depth too. */
  private literal(value: unknown, field: string, depth: number): void {
    if (!this.visit(field, depth)) return;
    if (Array.isArray(value)) value.forEach((v) => this.literal(v, field, depth + 1));
    else if (isObject(value)) Object.values(value).forEach((v) => this.literal(v, field, depth + 1));
    else if (value === undefined || typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') this.error(field, 'must be a JSON value');
    else if (typeof value === 'number' && !Number.isFinite(value)) this.error(field, NOT_FINITE);
    else if (beyondSafe(value)) this.error(field, notExact(value));
  }
}
