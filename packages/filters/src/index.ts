// Flow filter rules: JSONPath expressions and Convoy/Hookdeck-style operator trees.
// Pure (no I/O). The router evaluates them; the API validates them when a flow is saved.
// Semantics are documented in packages/filters/README.md.
export type { FilterDocument, FlowFilter } from './types';
export { validateFilter, matchesFilter, compileFilter, type CompiledFilter } from './flow-filter';
export { buildFilterDocument, parseBody, parseForm, type RawEvent } from './filter-document';
export { compileJsonPath, queryJsonPath, type CompiledJsonPath } from './jsonpath/compile-jsonpath';
export { JsonPathSyntaxError } from './jsonpath/scanner';
export { Budget, BudgetExceededError } from './budget';
export { LIMITS } from './limits';
