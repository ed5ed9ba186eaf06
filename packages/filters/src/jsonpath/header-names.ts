import type { FilterExpr, Operand, PathQuery, Segment, Selector } from './ast';

/**
 * HTTP header names are case-insensitive and the filter document holds them in lower case
 * (`$.headers['x-github-event']`), so a name selected right under `$.headers` is lowered:
 * `$.headers['X-GitHub-Event']` selects the same header. Filter expressions are rewritten
 * the same way (`$[?($.headers.X-Env == 'prod')]`).
 */
export function lowerCaseHeaderNames(q: PathQuery): PathQuery {
  const underHeaders = q.root === '$' && isHeaders(q.segments[0]);
  return {
    root: q.root,
    segments: q.segments.map((seg, i) => ({ descendant: seg.descendant, selectors: seg.selectors.map((sel) => selector(sel, underHeaders && i === 1)) })),
  };
}

function isHeaders(seg: Segment | undefined): boolean {
  const only = seg && !seg.descendant && seg.selectors.length === 1 ? seg.selectors[0] : undefined;
  return only?.kind === 'name' && only.name === 'headers';
}

function selector(sel: Selector, lower: boolean): Selector {
  if (sel.kind === 'name' && lower) return { kind: 'name', name: sel.name.toLowerCase() };
  if (sel.kind === 'filter') return { kind: 'filter', expr: expr(sel.expr) };
  return sel;
}

function expr(e: FilterExpr): FilterExpr {
  switch (e.kind) {
    case 'or':
    case 'and':
      return { kind: e.kind, items: e.items.map(expr) };
    case 'not':
      return { kind: 'not', expr: expr(e.expr) };
    case 'exists':
      return { kind: 'exists', query: lowerCaseHeaderNames(e.query) };
    case 'compare':
      return { kind: 'compare', op: e.op, left: operand(e.left), right: operand(e.right) };
  }
}

function operand(o: Operand): Operand {
  return o.kind === 'query' ? { kind: 'query', query: lowerCaseHeaderNames(o.query) } : o;
}
