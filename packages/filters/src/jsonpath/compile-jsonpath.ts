import { Budget, BudgetExceededError } from '../budget';
import type { PathQuery } from './ast';
import { evaluateQuery } from './evaluate-jsonpath';
import { parseJsonPath } from './parse-jsonpath';

export interface CompiledJsonPath {
  readonly source: string;
  readonly ast: PathQuery;
  /** The selected values; throws BudgetExceededError when the budget runs out. */
  query(doc: unknown, budget?: Budget): unknown[];
  /** True when at least one node is selected; false when none is or the budget runs out. */
  matches(doc: unknown, budget?: Budget): boolean;
}

/**
 * Parses once (throws JsonPathSyntaxError with a position), evaluates many times.
 * `filterDocument`: the query runs against a FilterDocument, whose header names are lower case,
 * so names selected from its headers object are lowered (see header-names).
 */
export function compileJsonPath(source: string, opts: { filterDocument?: boolean } = {}): CompiledJsonPath {
  const ast = parseJsonPath(source);
  const run = (doc: unknown, budget: Budget): unknown[] => evaluateQuery(ast, doc, doc, budget, { filterDocument: opts.filterDocument });
  return {
    source,
    ast,
    query: (doc, budget = new Budget()) => run(doc, budget),
    matches(doc, budget = new Budget()) {
      try {
        return run(doc, budget).length > 0;
      } catch (err) {
        if (err instanceof BudgetExceededError || err instanceof RangeError) return false;
        throw err;
      }
    },
  };
}

/** One-shot query: the values `path` selects in `doc`. */
export function queryJsonPath(doc: unknown, path: string): unknown[] {
  return compileJsonPath(path).query(doc);
}
