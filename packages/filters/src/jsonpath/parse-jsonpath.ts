import { LIMITS } from '../limits';
import type { CompareOp, FilterExpr, Operand, PathQuery, Segment, Selector } from './ast';
import { JsonPathSyntaxError, Scanner } from './scanner';

const COMPARE_OPS: CompareOp[] = ['==', '!=', '<=', '>=', '<', '>'];

/**
 * Parses a JSONPath expression: `$`, `.name`, `['name']`, `[n]` (negative from the end),
 * `[*]`, `.*`, `..` (recursive descent), `[a:b:c]`, unions `[a,b]` and filters
 * `[?(@.x == 'y' && !@.z)]`. No code runs: filters are parsed into a tree here.
 */
export function parseJsonPath(src: string): PathQuery {
  if (typeof src !== 'string') throw new JsonPathSyntaxError('expression must be a string', 0);
  if (src.length > LIMITS.maxExpressionLength) throw new JsonPathSyntaxError(`expression is longer than ${LIMITS.maxExpressionLength} characters`, LIMITS.maxExpressionLength);
  const parser = new PathParser(new Scanner(src));
  const query = parser.query('$');
  parser.s.skipSpace();
  if (!parser.s.done) parser.s.fail(`unexpected '${parser.s.peek()}'`);
  return query;
}

class PathParser {
  private nesting = 0;
  private descendants = 0;
  constructor(readonly s: Scanner) {}

  private enter(): void {
    if (++this.nesting > LIMITS.maxExpressionNesting) this.s.fail(`nested deeper than ${LIMITS.maxExpressionNesting} levels`);
  }

  query(root: '$' | '@'): PathQuery {
    this.s.skipSpace();
    if (this.s.peek() !== root) this.s.fail(root === '$' ? "expression must start with '$'" : "expected '@' or '$'");
    this.s.pos++;
    const segments: Segment[] = [];
    for (;;) {
      const save = this.s.pos;
      this.s.skipSpace();
      const c = this.s.peek();
      if (c === '.' || c === '[') segments.push(this.segment());
      else {
        this.s.pos = save;
        return { root, segments };
      }
    }
  }

  private segment(): Segment {
    if (this.s.eat('..')) {
      if (++this.descendants > LIMITS.maxDescendantSegments) this.s.fail(`more than ${LIMITS.maxDescendantSegments} '..' segments`);
      if (this.s.peek() === '[') return { descendant: true, selectors: this.bracket() };
      return { descendant: true, selectors: [this.dotted()] };
    }
    if (this.s.eat('.')) return { descendant: false, selectors: [this.dotted()] };
    return { descendant: false, selectors: this.bracket() };
  }

  private dotted(): Selector {
    if (this.s.peek() === '*') {
      this.s.pos++;
      return { kind: 'wildcard' };
    }
    return { kind: 'name', name: this.s.readName() };
  }

  private bracket(): Selector[] {
    this.s.expect('[');
    this.enter();
    const selectors: Selector[] = [this.selector()];
    while (this.s.eat(',')) selectors.push(this.selector());
    this.s.expect(']');
    this.nesting--;
    return selectors;
  }

  private selector(): Selector {
    this.s.skipSpace();
    const c = this.s.peek();
    if (c === "'" || c === '"') return { kind: 'name', name: this.s.readString() };
    if (c === '*') {
      this.s.pos++;
      return { kind: 'wildcard' };
    }
    if (c === '?') {
      this.s.pos++;
      return { kind: 'filter', expr: this.or() };
    }
    const start = this.s.readInteger();
    if (!this.s.eat(':')) {
      if (start === undefined) this.s.fail('expected a name, index, slice, * or ?(filter)');
      return { kind: 'index', index: start };
    }
    const end = this.s.readInteger();
    const step = this.s.eat(':') ? this.s.readInteger() : undefined;
    return { kind: 'slice', start, end, step };
  }

  private or(): FilterExpr {
    const items = [this.and()];
    while (this.s.eat('||')) items.push(this.and());
    return items.length === 1 ? items[0]! : { kind: 'or', items };
  }

  private and(): FilterExpr {
    const items = [this.unary()];
    while (this.s.eat('&&')) items.push(this.unary());
    return items.length === 1 ? items[0]! : { kind: 'and', items };
  }

  private unary(): FilterExpr {
    this.s.skipSpace();
    if (this.s.peek() === '!' && this.s.peek(1) !== '=') {
      this.s.pos++;
      this.enter();
      const expr = this.unary();
      this.nesting--;
      return { kind: 'not', expr };
    }
    if (this.s.eat('(')) {
      this.enter();
      const expr = this.or();
      this.s.expect(')');
      this.nesting--;
      return expr;
    }
    const at = this.s.pos;
    const left = this.operand();
    const op = COMPARE_OPS.find((o) => this.s.eat(o));
    if (!op) {
      if (left.kind === 'literal') this.s.fail('a literal must be compared with something', at);
      return { kind: 'exists', query: left.query };
    }
    return { kind: 'compare', op, left, right: this.operand() };
  }

  private operand(): Operand {
    this.s.skipSpace();
    const c = this.s.peek();
    if (c === '@' || c === '$') {
      this.enter();
      const query = this.query(c);
      this.nesting--;
      return { kind: 'query', query };
    }
    const lit = this.s.readLiteral();
    if (!lit) this.s.fail("expected '@', '$' or a literal");
    return { kind: 'literal', value: lit.value };
  }
}
