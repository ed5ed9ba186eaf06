import type { FieldError } from '@hookline/errors';
import { LIMITS } from './limits';

/**
 * `event_types` entries are exact types or a prefix ending in `*` (`invoice.*`, `*`).
 * `*` alone matches every event, even one without a type; any other pattern needs a type.
 */
export function compileEventTypes(value: unknown, field: string, errors: FieldError[]): ((type: string | null) => boolean) | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    errors.push({ field, message: 'must be an array of event types' });
    return undefined;
  }
  if (value.length > LIMITS.maxEventTypes) errors.push({ field, message: `must have at most ${LIMITS.maxEventTypes} entries` });
  const exact = new Set<string>();
  const prefixes: string[] = [];
  let any = false;
  value.forEach((t, i) => {
    const at = `${field}[${i}]`;
    if (typeof t !== 'string' || t.length === 0 || t.length > 200) return errors.push({ field: at, message: 'must be a non-empty string of at most 200 characters' });
    const star = t.indexOf('*');
    if (star !== -1 && star !== t.length - 1) return errors.push({ field: at, message: "'*' is only allowed at the end (e.g. 'invoice.*')" });
    if (t === '*') any = true;
    else if (star !== -1) prefixes.push(t.slice(0, -1));
    else exact.add(t);
  });
  // An empty list constrains nothing, like an absent one.
  if (value.length === 0 || any) return undefined;
  return (type) => type !== null && (exact.has(type) || prefixes.some((p) => type.startsWith(p)));
}
