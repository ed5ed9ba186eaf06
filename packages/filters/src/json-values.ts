import { Budget, BudgetExceededError } from './budget';
import { LIMITS } from './limits';

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality of JSON values (no coercion: 1 is not "1"). */
export function deepEqual(a: unknown, b: unknown, budget: Budget, depth = 0): boolean {
  budget.tick();
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
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
 * ISO-8601 timestamps order correctly); anything else is not comparable (undefined).
 */
export function compareValues(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

/** Own enumerable member, never something inherited from Object.prototype. */
export function member(obj: JsonObject, key: string): { found: boolean; value: unknown } {
  if (!Object.prototype.hasOwnProperty.call(obj, key)) return { found: false, value: undefined };
  return { found: true, value: obj[key] };
}
