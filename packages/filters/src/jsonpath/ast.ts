/** A parsed JSONPath query (RFC 9535 shaped, plus `?(…)` filters as Goessner/Jayway write them). */
export interface PathQuery {
  root: '$' | '@';
  segments: Segment[];
}

export interface Segment {
  /** `..`: apply the selectors to the node and to every descendant. */
  descendant: boolean;
  selectors: Selector[];
}

export type Selector =
  | { kind: 'name'; name: string }
  | { kind: 'wildcard' }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start?: number; end?: number; step?: number }
  | { kind: 'filter'; expr: FilterExpr };

/** A bigint is an integer literal beyond ±(2^53−1), kept exactly (scanner.ts). */
export type Literal = string | number | bigint | boolean | null;

export type Operand = { kind: 'literal'; value: Literal } | { kind: 'query'; query: PathQuery };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export type FilterExpr =
  | { kind: 'or'; items: FilterExpr[] }
  | { kind: 'and'; items: FilterExpr[] }
  | { kind: 'not'; expr: FilterExpr }
  | { kind: 'exists'; query: PathQuery }
  | { kind: 'compare'; op: CompareOp; left: Operand; right: Operand };
