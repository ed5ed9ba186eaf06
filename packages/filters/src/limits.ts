/**
 * Bounds that keep filter evaluation safe on hostile input: a filter is data written by a
 * tenant and run against payloads written by anyone, so both sides are capped.
 */
export const LIMITS = {
  /** Longest JSONPath expression accepted. */
  maxExpressionLength: 1000,
  /** Nesting of brackets, parentheses and filters inside one JSONPath expression. */
  maxExpressionNesting: 32,
  /** `..` segments in one JSONPath expression (each one multiplies the work). */
  maxDescendantSegments: 4,
  /** JSONPath expressions per flow filter. */
  maxJsonPaths: 20,
  /** Nesting depth of a `match` operator tree. */
  maxTreeDepth: 32,
  /** Objects, arrays and values in a `match` tree, all counted. */
  maxTreeNodes: 2000,
  /** Entries of `event_types`. */
  maxEventTypes: 100,
  /** Values visited while evaluating one filter against one event; past it the filter does not match. */
  maxSteps: 100_000,
  /** Document depth that recursive descent and deep equality walk into. */
  maxDocumentDepth: 128,
} as const;
