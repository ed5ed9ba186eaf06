import { AppError } from '@hookline/errors';
import { STATE_ENUM } from '../http/schemas';

type State = (typeof STATE_ENUM)[number];

/** `?state=` on config lists; without it, everything but DELETED. */
export function stateFilter(query: Record<string, unknown>): { state: { not: 'DELETED' } } | { state: State } {
  const s = query['state'];
  if (s === undefined || s === '') return { state: { not: 'DELETED' } };
  if (typeof s !== 'string' || !(STATE_ENUM as readonly string[]).includes(s)) throw AppError.validation([{ field: 'state', message: `must be one of: ${STATE_ENUM.join(', ')}` }]);
  return { state: s as State };
}
