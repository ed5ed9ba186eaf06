import type { FieldError } from '@hookline/errors';
import { Budget } from './budget';
import { compileEventTypes } from './event-types';
import { isObject } from './json-values';
import { compileJsonPath, type CompiledJsonPath } from './jsonpath/compile-jsonpath';
import { hasNonFiniteLiteral, NON_FINITE_LITERAL } from './jsonpath/non-finite';
import { parseJsonPath } from './jsonpath/parse-jsonpath';
import { JsonPathSyntaxError } from './jsonpath/scanner';
import { LIMITS } from './limits';
import { compileMatch } from './match/compile-match';
import type { FilterDocument, FlowFilter } from './types';

export interface CompiledFilter {
  /** False when the filter is invalid; an invalid filter never matches (fail closed). */
  readonly valid: boolean;
  readonly errors: FieldError[];
  /** Never throws; a filter that spends its budget does not match. */
  matches(doc: FilterDocument): boolean;
}

const KEYS = new Set(['event_types', 'jsonpath', 'match']);

/** Validates and compiles a flow filter once; the router keeps the result per flow. */
export function compileFilter(filter: unknown, fieldPrefix = 'filter'): CompiledFilter {
  const errors: FieldError[] = [];
  if (filter === undefined || filter === null) return { valid: true, errors, matches: () => true };
  if (!isObject(filter)) return invalid([{ field: fieldPrefix, message: 'must be an object with event_types, jsonpath and/or match' }]);
  for (const key of Object.keys(filter)) if (!KEYS.has(key)) errors.push({ field: `${fieldPrefix}.${key}`, message: 'is not a filter field (use event_types, jsonpath or match)' });

  const typeTest = compileEventTypes(filter['event_types'], `${fieldPrefix}.event_types`, errors);
  const paths = compilePaths(filter['jsonpath'], `${fieldPrefix}.jsonpath`, errors);
  const match = filter['match'] === undefined ? undefined : compileMatch(filter['match'], `${fieldPrefix}.match`);
  if (match) errors.push(...match.errors);
  if (errors.length) return invalid(errors);

  return {
    valid: true,
    errors,
    matches(doc) {
      try {
        if (typeTest && !typeTest(doc.type)) return false;
        const budget = new Budget();
        if (paths.some((p) => !p.matches(doc, budget))) return false;
        return !match || match.predicate(doc, budget);
      } catch {
        // BudgetExceededError, or a RangeError from a pathological document: no match.
        return false;
      }
    },
  };
}

function invalid(errors: FieldError[]): CompiledFilter {
  return { valid: false, errors, matches: () => false };
}

function compilePaths(value: unknown, field: string, errors: FieldError[]): CompiledJsonPath[] {
  if (value === undefined) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) {
    errors.push({ field, message: 'must be a JSONPath string or an array of them' });
    return [];
  }
  if (list.length > LIMITS.maxJsonPaths) errors.push({ field, message: `must have at most ${LIMITS.maxJsonPaths} expressions` });
  const out: CompiledJsonPath[] = [];
  list.forEach((src, i) => {
    const at = typeof value === 'string' ? field : `${field}[${i}]`;
    if (typeof src !== 'string') return errors.push({ field: at, message: 'must be a string' });
    try {
      out.push(compileJsonPath(src, { filterDocument: true }));
    } catch (err) {
      if (!(err instanceof JsonPathSyntaxError)) throw err;
      errors.push({ field: at, message: err.message });
    }
  });
  return out;
}

/**
 * Field errors of a filter as the API reports them (400 validation-error); [] when valid.
 * Stricter than compileFilter (which the router runs on stored filters): a JSONPath number
 * literal must be finite (jsonpath/non-finite.ts).
 */
export function validateFilter(filter: unknown, fieldPrefix = 'filter'): FieldError[] {
  const errors = compileFilter(filter, fieldPrefix).errors;
  if (errors.length || !isObject(filter)) return errors;
  const paths = filter['jsonpath'];
  const list = typeof paths === 'string' ? [paths] : Array.isArray(paths) ? paths : [];
  list.forEach((src, i) => {
    if (typeof src === 'string' && hasNonFiniteLiteral(parseJsonPath(src))) {
      errors.push({ field: typeof paths === 'string' ? `${fieldPrefix}.jsonpath` : `${fieldPrefix}.jsonpath[${i}]`, message: NON_FINITE_LITERAL });
    }
  });
  return errors;
}

const compiled = new WeakMap<object, CompiledFilter>();

/** Whether `doc` passes `filter`; never throws (an invalid filter matches nothing). */
export function matchesFilter(filter: FlowFilter, doc: FilterDocument): boolean {
  try {
    if (!isObject(filter)) return compileFilter(filter).matches(doc);
    let c = compiled.get(filter);
    if (!c) compiled.set(filter, (c = compileFilter(filter)));
    return c.matches(doc);
  } catch {
    return false;
  }
}
