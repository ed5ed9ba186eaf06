import type { Budget } from '../budget';
import { chargeStrings, compareValues, deepEqual } from '../json-values';
import { candidates } from './resolve-field';

export type Predicate<T> = (input: T, budget: Budget) => boolean;
/** A test of the values one field path resolved to (empty = the field is missing). */
export type FieldPredicate = Predicate<readonly unknown[]>;

export const COMPARISON_OPERATORS = ['$gt', '$gte', '$lt', '$lte'] as const;
export const FIELD_OPERATORS = ['$eq', '$neq', '$in', '$nin', ...COMPARISON_OPERATORS, '$exists', '$startsWith', '$endsWith', '$not', '$and', '$or'] as const;
export const TREE_OPERATORS = ['$and', '$or', '$not'] as const;

const anyCandidate =
  (test: (v: unknown, budget: Budget) => boolean): FieldPredicate =>
  (values, budget) =>
    candidates(values, budget).some((v) => test(v, budget));

export function eq(operand: unknown): FieldPredicate {
  return anyCandidate((v, budget) => deepEqual(v, operand, budget));
}

export function inList(list: readonly unknown[]): FieldPredicate {
  return anyCandidate((v, budget) => list.some((item) => deepEqual(v, item, budget)));
}

export function not<T>(p: Predicate<T>): Predicate<T> {
  return (input, budget) => !p(input, budget);
}

export function comparison(op: (typeof COMPARISON_OPERATORS)[number], operand: number | string): FieldPredicate {
  return anyCandidate((v, budget) => {
    const order = compareValues(v, operand, budget);
    if (order === undefined) return false;
    if (op === '$gt') return order > 0;
    if (op === '$gte') return order >= 0;
    if (op === '$lt') return order < 0;
    return order <= 0;
  });
}

export function exists(expected: boolean): FieldPredicate {
  return (values) => values.length > 0 === expected;
}

export function affix(op: '$startsWith' | '$endsWith', operand: string): FieldPredicate {
  return anyCandidate((v, budget) => {
    if (typeof v !== 'string') return false;
    chargeStrings(budget, v, operand);
    return op === '$startsWith' ? v.startsWith(operand) : v.endsWith(operand);
  });
}

export function all<T>(items: Predicate<T>[]): Predicate<T> {
  return (input, budget) => items.every((p) => p(input, budget));
}

export function some<T>(items: Predicate<T>[]): Predicate<T> {
  return (input, budget) => items.some((p) => p(input, budget));
}
