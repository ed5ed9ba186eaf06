import type { FieldError } from '@hookline/errors';
import { parsePath } from '@hookline/http';

/**
 * `config.event_type_path` is checked with the parser ingest evaluates it with (parsePath),
 * so what the API accepts ingest can read: a path it could not parse (wildcards, `..`,
 * filters) would give every event a null type, and type filters would drop them silently.
 */
export function eventTypePathErrors(path: unknown, field = 'config.event_type_path'): FieldError[] {
  if (path === undefined || (typeof path === 'string' && parsePath(path) !== null)) return [];
  return [{ field, message: "is not a supported path: use dotted names and array indexes only ($.data.kind, data.items[0].name, $['odd-key']); no wildcards, '..' or filters" }];
}
