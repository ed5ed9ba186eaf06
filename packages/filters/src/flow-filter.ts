import type { FieldError } from '@hookline/errors';
import { Budget } from './budget';
import { compileEventTypes } from './event-types';
import { isObject } from './json-values';
import type { FilterExpr, PathQuery } from './jsonpath/ast';
import { compileJsonPath, type CompiledJsonPath } from './jsonpath/compile-jsonpath';
import { numberLiteralProblem } from './jsonpath/non-finite';
import { parseJsonPath } from './jsonpath/parse-jsonpath';
import { JsonPathSyntaxError } from './jsonpath/scanner';
import { LIMITS } from './limits';
import { compileMatch } from './match/compile-match';
import type { FilterDocument, FlowFilter } from './types';

export interface CompiledFilter {
  /** False when the filter is invalid; an invalid filter never matches (fail closed). */
  readonly valid: boolean;
  readonly errors: FieldError[];
  /**
   * Whether `matches` may read the event's stored request (`headers`, `query` or `body`).
   * False when it reads only `type` and `source` (e.g. `event_types` alone): the router then
   * neither loads nor parses the payload. Conservative: true unless every part provably stays
   * in `type`/`source`. An invalid filter reads nothing.
   */
  readonly readsPayload: boolean;
  /**
   * The `event_types` part alone (true when there is none, false for an invalid filter): a
   * test of the event's type that needs no document, run before one is built.
   */
  acceptsType(type: string | null): boolean;
  /**
   * Never throws; a filter that spends its budget does not match. `eventBudget`: a budget
   * shared by every filter run on the same event, charged as well as this filter's own
   * (LIMITS.maxSteps); once it is spent, this filter does not match either.
   */
  matches(doc: FilterDocument, eventBudget?: Budget): boolean;
}

const KEYS = new Set(['event_types', 'jsonpath', 'match']);

/** Validates and compiles a flow filter once; the router keeps the result per flow. */
export function compileFilter(filter: unknown, fieldPrefix = 'filter'): CompiledFilter {
  const errors: FieldError[] = [];
  if (filter === undefined || filter === null) return { valid: true, errors, readsPayload: false, acceptsType: () => true, matches: () => true };
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
    readsPayload: paths.some((p) => pathReadsPayload(p.ast)) || (filter['match'] !== undefined && treeReadsPayload(filter['match'])),
    acceptsType: (type) => !typeTest || typeTest(type),
    matches(doc, eventBudget) {
      try {
        if (typeTest && !typeTest(doc.type)) return false;
        const budget = eventBudget ? new SharedBudget(eventBudget) : new Budget();
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
  return { valid: false, errors, readsPayload: false, acceptsType: () => false, matches: () => false };
}

/** One filter's budget that also charges the event's: each step counts against both. */
class SharedBudget extends Budget {
  constructor(private readonly shared: Budget) {
    super();
  }

  override tick(n = 1): void {
    this.shared.tick(n);
    super.tick(n);
  }
}

/** The parts of a filter document that are not the stored request. */
const EVENT_ONLY = new Set(['type', 'source']);

/** Whether a (valid) `match` tree names a field outside `type`/`source`; nested trees stay under their field. */
function treeReadsPayload(tree: unknown): boolean {
  if (!isObject(tree)) return true;
  return Object.entries(tree).some(([key, value]) =>
    key === '$and' || key === '$or' ? !Array.isArray(value) || value.some(treeReadsPayload) : key === '$not' ? treeReadsPayload(value) : !EVENT_ONLY.has(key.split('.')[0]!),
  );
}

/**
 * Whether a JSONPath query may reach outside `type`/`source`: a `$` query must start with
 * name selectors of those two only (no `..`); an `@` query is relative to nodes already inside
 * (filters sit after that first segment), so only the `$` queries nested in filters count.
 */
function pathReadsPayload(q: PathQuery): boolean {
  if (q.root === '$') {
    const first = q.segments[0];
    if (!first || first.descendant || !first.selectors.every((s) => s.kind === 'name' && EVENT_ONLY.has(s.name))) return true;
  }
  return q.segments.some((seg) => seg.selectors.some((s) => s.kind === 'filter' && exprReadsPayload(s.expr)));
}

function exprReadsPayload(e: FilterExpr): boolean {
  switch (e.kind) {
    case 'or':
    case 'and':
      return e.items.some(exprReadsPayload);
    case 'not':
      return exprReadsPayload(e.expr);
    case 'exists':
      return pathReadsPayload(e.query);
    case 'compare':
      return [e.left, e.right].some((o) => o.kind === 'query' && pathReadsPayload(o.query));
  }
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
 * literal must be finite, within ±(2^53−1), and hold no more digits than a double (jsonpath/non-finite.ts).
 */
export function validateFilter(filter: unknown, fieldPrefix = 'filter'): FieldError[] {
  const errors = compileFilter(filter, fieldPrefix).errors;
  if (errors.length || !isObject(filter)) return errors;
  const paths = filter['jsonpath'];
  const list = typeof paths === 'string' ? [paths] : Array.isArray(paths) ? paths : [];
  list.forEach((src, i) => {
    const problem = typeof src === 'string' ? numberLiteralProblem(parseJsonPath(src), src) : undefined;
    if (problem) errors.push({ field: typeof paths === 'string' ? `${fieldPrefix}.jsonpath` : `${fieldPrefix}.jsonpath[${i}]`, message: problem });
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
