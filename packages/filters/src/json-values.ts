import { Budget, BudgetExceededError } from './budget';
import { LIMITS } from './limits';

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Charges comparing two strings (==, <, $startsWith, …) beyond the step the comparison
 * already costs: one more per KiB of the shorter string, what a comparison may read of
 * both. A step is one value visited; without this, comparing two 100 KB strings cost one
 * step as comparing two short ones did, so a filter comparing them once per element of a
 * long array ran ~30× longer on the same budget. About one step's CPU per KiB.
 */
export function chargeStrings(budget: Budget, a: string, b: string): void {
  const extra = Math.min(a.length, b.length) >> 10;
  if (extra > 0) budget.tick(extra);
}

/**
 * Structural equality of JSON values (no coercion: 1 is not "1"). Integers beyond ±(2^53−1)
 * are bigints (a body's, filter-document.ts; a JSONPath literal's, scanner.ts) and compare
 * exactly (see exactNumber). Two strings cost more the longer they are (chargeStrings).
 */
export function deepEqual(a: unknown, b: unknown, budget: Budget, depth = 0): boolean {
  budget.tick();
  if (typeof a === 'string' && typeof b === 'string') {
    chargeStrings(budget, a, b);
    return a === b;
  }
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return (typeof a === 'bigint' || typeof b === 'bigint') && compareExact(a, b) === 0;
  if (depth > LIMITS.maxDocumentDepth) throw new BudgetExceededError('document too deep');
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => deepEqual(v, b[i], budget, depth + 1));
  }
  const ak = Object.keys(a);
  const bo = b as JsonObject;
  if (ak.length !== Object.keys(bo).length) return false;
  const ao = a as JsonObject;
  return ak.every((k) => Object.prototype.hasOwnProperty.call(bo, k) && deepEqual(ao[k], bo[k], budget, depth + 1));
}

/**
 * Orders two values when both are numbers or both are strings (strings by code unit, so
 * ISO-8601 timestamps order correctly); anything else is not comparable (undefined). Two
 * strings are charged to `budget` by their length (chargeStrings); the comparison's own
 * step is the caller's.
 */
export function compareValues(a: unknown, b: unknown, budget: Budget): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') {
    chargeStrings(budget, a, b);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (typeof a === 'bigint' || typeof b === 'bigint') return compareExact(a, b);
  return undefined;
}

/**
 * Orders two numbers exactly when one is a bigint (an integer beyond ±(2^53−1), read
 * exactly); undefined when either is not a number. Only reached off the common path: two
 * plain numbers compare as doubles, as before.
 */
function compareExact(a: unknown, b: unknown): number | undefined {
  const x = exactNumber(a);
  const y = exactNumber(b);
  if (x === undefined || y === undefined) return undefined;
  // Relational operators between a bigint and a number compare the mathematical values.
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A number as an exact value: a bigint stays itself; a double that is an integer becomes
 * the bigint of its shortest decimal form (what JSON.stringify writes: the double nearest
 * 1234567890123456789 counts as 1234567890123456800, not as the 1234567890123456768 it
 * holds); any other double stays a double (it is never equal to a bigint). Undefined for a
 * non-number, and for NaN.
 */
export function exactNumber(v: unknown): bigint | number | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v !== 'number' || Number.isNaN(v)) return undefined;
  if (Number.isSafeInteger(v)) return BigInt(v);
  if (!Number.isInteger(v)) return v;
  // |v| > 2^53−1: String(v) is its shortest decimal form, e.g. 1234567890123456800 or 1.5e+21.
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e\+(\d+))?$/.exec(String(v))!;
  const frac = m[3] ?? '';
  return BigInt(`${m[1]}${m[2]}${frac}${'0'.repeat(Number(m[4] ?? 0) - frac.length)}`);
}

/** Own enumerable member, never something inherited from Object.prototype. */
export function member(obj: JsonObject, key: string): { found: boolean; value: unknown } {
  if (!Object.prototype.hasOwnProperty.call(obj, key)) return { found: false, value: undefined };
  return { found: true, value: obj[key] };
}
