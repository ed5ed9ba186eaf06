import { AppError } from '@hookline/errors';
import type { QueryParam } from '../http/route';
import { STATE_ENUM } from '../http/schemas';

type State = (typeof STATE_ENUM)[number];

/** The config lists' filter parameters, for their OpenAPI `query` (`lifecycle_status` is documented as `status`). */
export const STATE_FILTER_PARAMS: readonly QueryParam[] = ['state', 'lifecycle_status'];

function readState(query: Record<string, unknown>, field: 'state' | 'status'): State | undefined {
  const s = query[field];
  if (s === undefined || s === '') return undefined;
  if (typeof s !== 'string' || !(STATE_ENUM as readonly string[]).includes(s)) throw AppError.validation([{ field, message: `must be one of: ${STATE_ENUM.join(', ')}` }]);
  return s as State;
}

/**
 * `?state=` on config lists, or `?status=` (SPEC.md's name for the filter; both given must
 * agree); without either, everything but DELETED.
 */
export function stateFilter(query: Record<string, unknown>): { state: { not: 'DELETED' } } | { state: State } {
  const state = readState(query, 'state');
  const status = readState(query, 'status');
  if (state && status && state !== status) throw AppError.validation([{ field: 'status', message: `is an alias of state and must equal it when both are given (state is ${state})` }]);
  const s = state ?? status;
  return s ? { state: s } : { state: { not: 'DELETED' } };
}
