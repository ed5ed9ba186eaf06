import type { FilterExpr, Operand, PathQuery } from './ast';

// A JSONPath number literal that is not finite (`1e400` reads as Infinity) is refused when
// a filter is written (validateFilter): no JSON value equals it, and `< 1e400` would quietly
// mean "any number". It is not refused when a stored filter is compiled (the router), so a
// flow written before the rule keeps the meaning it had.

/** True when `query` holds a number literal that is not finite, at any filter depth. */
export function hasNonFiniteLiteral(query: PathQuery): boolean {
  return query.segments.some((seg) => seg.selectors.some((sel) => sel.kind === 'filter' && exprHas(sel.expr)));
}

function exprHas(e: FilterExpr): boolean {
  switch (e.kind) {
    case 'or':
    case 'and':
      return e.items.some(exprHas);
    case 'not':
      return exprHas(e.expr);
    case 'exists':
      return hasNonFiniteLiteral(e.query);
    case 'compare':
      return operandHas(e.left) || operandHas(e.right);
  }
}

function operandHas(op: Operand): boolean {
  return op.kind === 'literal' ? typeof op.value === 'number' && !Number.isFinite(op.value) : hasNonFiniteLiteral(op.query);
}

export const NON_FINITE_LITERAL = 'has a number out of range (1e400 reads as Infinity; it must be finite)';
