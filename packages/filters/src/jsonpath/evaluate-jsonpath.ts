import { Budget, BudgetExceededError } from '../budget';
import { compareValues, deepEqual, isObject, member } from '../json-values';
import { LIMITS } from '../limits';
import type { FilterExpr, Operand, PathQuery, Selector } from './ast';
import { headersObject, memberName } from './header-names';

const NOTHING = Symbol('nothing');
type Value = unknown | typeof NOTHING;

interface Context {
  root: unknown;
  budget: Budget;
  /** The document's headers object, whose member names are looked up in lower case. */
  headers: object | undefined;
}

/**
 * Evaluates a parsed query; every produced node costs one budget step.
 * `filterDocument`: `root` is a FilterDocument, so header names are matched in lower case (see header-names).
 */
export function evaluateQuery(query: PathQuery, root: unknown, current: unknown, budget: Budget, opts: { filterDocument?: boolean } = {}): unknown[] {
  return run(query, current, { root, budget, headers: opts.filterDocument ? headersObject(root) : undefined });
}

function run(query: PathQuery, current: unknown, ctx: Context): unknown[] {
  const budget = ctx.budget;
  let nodes: unknown[] = [query.root === '$' ? ctx.root : current];
  for (const seg of query.segments) {
    const next: unknown[] = [];
    for (const node of nodes) {
      const targets = seg.descendant ? descendantsOrSelf(node, budget) : [node];
      for (const target of targets) for (const sel of seg.selectors) select(sel, target, ctx, next);
    }
    nodes = next;
    if (nodes.length === 0) break;
  }
  return nodes;
}

function push(out: unknown[], value: unknown, budget: Budget): void {
  budget.tick();
  out.push(value);
}

function select(sel: Selector, node: unknown, ctx: Context, out: unknown[]): void {
  switch (sel.kind) {
    case 'name':
      if (isObject(node)) {
        const m = member(node, memberName(sel.name, node, ctx.headers));
        if (m.found) push(out, m.value, ctx.budget);
      }
      return;
    case 'wildcard':
      if (Array.isArray(node)) for (const v of node) push(out, v, ctx.budget);
      else if (isObject(node)) for (const v of Object.values(node)) push(out, v, ctx.budget);
      return;
    case 'index':
      if (Array.isArray(node)) {
        const i = sel.index < 0 ? node.length + sel.index : sel.index;
        if (i >= 0 && i < node.length) push(out, node[i], ctx.budget);
      }
      return;
    case 'slice':
      if (Array.isArray(node)) for (const i of sliceIndexes(node.length, sel)) push(out, node[i], ctx.budget);
      return;
    case 'filter':
      // Arrays filter their elements; an object is tested itself (Jayway's reading), so
      // `$.body[?(@.amount > 10)]` selects the body when its amount is over 10.
      if (Array.isArray(node)) {
        for (const v of node) if (test(sel.expr, v, ctx)) push(out, v, ctx.budget);
      } else if (isObject(node) && test(sel.expr, node, ctx)) push(out, node, ctx.budget);
      return;
  }
}

/** RFC 9535 slice semantics: negative bounds count from the end, step 0 selects nothing. */
function sliceIndexes(len: number, sel: { start?: number; end?: number; step?: number }): number[] {
  const step = sel.step ?? 1;
  if (step === 0) return [];
  const norm = (i: number): number => (i >= 0 ? i : len + i);
  const out: number[] = [];
  if (step > 0) {
    const lo = Math.min(Math.max(norm(sel.start ?? 0), 0), len);
    const hi = Math.min(Math.max(norm(sel.end ?? len), 0), len);
    for (let i = lo; i < hi; i += step) out.push(i);
  } else {
    const hi = Math.min(Math.max(norm(sel.start ?? len - 1), -1), len - 1);
    const lo = Math.min(Math.max(sel.end === undefined ? -1 : norm(sel.end), -1), len - 1);
    for (let i = hi; i > lo; i += step) out.push(i);
  }
  return out;
}

/** The node and all its descendants, walked with an explicit stack (no recursion). */
function descendantsOrSelf(node: unknown, budget: Budget): unknown[] {
  const out: unknown[] = [];
  const stack: Array<[unknown, number]> = [[node, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    budget.tick();
    out.push(v);
    const children = Array.isArray(v) ? v : isObject(v) ? Object.values(v) : undefined;
    if (!children || children.length === 0) continue;
    if (depth >= LIMITS.maxDocumentDepth) throw new BudgetExceededError('document too deep');
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], depth + 1]);
  }
  return out;
}

function test(expr: FilterExpr, current: unknown, ctx: Context): boolean {
  ctx.budget.tick();
  switch (expr.kind) {
    case 'or':
      return expr.items.some((e) => test(e, current, ctx));
    case 'and':
      return expr.items.every((e) => test(e, current, ctx));
    case 'not':
      return !test(expr.expr, current, ctx);
    case 'exists':
      return run(expr.query, current, ctx).length > 0;
    case 'compare':
      return compare(expr.op, operandValue(expr.left, current, ctx), operandValue(expr.right, current, ctx), ctx.budget);
  }
}

/** A comparison needs one value: a query selecting anything but exactly one node is Nothing. */
function operandValue(op: Operand, current: unknown, ctx: Context): Value {
  if (op.kind === 'literal') return op.value;
  const nodes = run(op.query, current, ctx);
  return nodes.length === 1 ? nodes[0] : NOTHING;
}

function equal(a: Value, b: Value, budget: Budget): boolean {
  if (a === NOTHING || b === NOTHING) return a === b;
  return deepEqual(a, b, budget);
}

function compare(op: string, a: Value, b: Value, budget: Budget): boolean {
  if (op === '==') return equal(a, b, budget);
  if (op === '!=') return !equal(a, b, budget);
  const order = a === NOTHING || b === NOTHING ? undefined : compareValues(a, b, budget);
  if (op === '<=' || op === '>=') {
    if (order === undefined) return equal(a, b, budget);
    return op === '<=' ? order <= 0 : order >= 0;
  }
  if (order === undefined) return false;
  return op === '<' ? order < 0 : order > 0;
}
