import type { FilterExpr, Operand, PathQuery } from './ast';
import { Scanner } from './scanner';

// A JSONPath number literal that is not finite (`1e400` reads as Infinity) is refused when
// a filter is written (validateFilter): no JSON value equals it, and `< 1e400` would quietly
// mean "any number". So is one beyond ±(2^53−1), or with more digits than a double holds
// (numberLiteralProblem): a `match` document cannot hold such a number exactly (it reaches
// the API through JSON.parse), and the two forms take the same numbers. None is refused
// when a stored filter is compiled (the router), so a flow written before the rules keeps
// the meaning it is written with (an integer literal beyond ±(2^53−1) compares exactly:
// scanner.ts).

/** Why a JSONPath expression's number literals are refused on write, if they are. */
export function numberLiteralProblem(query: PathQuery, src: string): string | undefined {
  return hasNonFiniteLiteral(query) ? NON_FINITE_LITERAL : impreciseLiteral(src);
}

/**
 * The first number literal of a (valid) expression that a double does not hold as written:
 * beyond ±(2^53−1), or with digits it rounds away. Read from the text, since a literal's
 * digits are gone once parsed; strings and names are skipped as the parser reads them.
 */
function impreciseLiteral(src: string): string | undefined {
  const s = new Scanner(src);
  while (!s.done) {
    const c = s.peek();
    if (c === "'" || c === '"') s.readString();
    else if (s.isNameStart()) s.readName();
    else {
      const text = s.readNumberText();
      if (text === undefined) s.pos++;
      else {
        const n = Number(text);
        const shown = String(n);
        const rounded = canonicalDecimal(text) !== canonicalDecimal(shown);
        if (Number.isFinite(n) && Math.abs(n) > Number.MAX_SAFE_INTEGER) {
          return `has a number beyond ±9007199254740991 (2^53−1), where numbers are not exact${rounded ? ` (${text} reads as ${shown})` : ` (${text})`}; ids that large cannot be matched exactly`;
        }
        if (Number.isFinite(n) && rounded) return `has a number with more digits than a 64-bit number holds (${text} reads as ${shown})`;
      }
    }
  }
  return undefined;
}

/** A decimal number's value as `digits e exponent`, without leading or trailing zeros: 1.50, 15e-1 and 0.15e1 are all 15e-1. */
function canonicalDecimal(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return text;
  const frac = m[3] ?? '';
  let digits = (m[2]! + frac).replace(/^0+/, '');
  if (digits === '') return '0';
  let exp = Number(m[4] ?? 0) - frac.length;
  const trimmed = digits.replace(/0+$/, '');
  exp += digits.length - trimmed.length;
  digits = trimmed;
  return `${m[1]}${digits}e${exp}`;
}

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
