import type { IncomingHttpHeaders } from 'node:http';
import type { FieldError } from '@hookline/errors';

/** The ingester's required-header rules: present, or equal to the configured value. */
export function checkRequiredHeaders(rules: readonly [string, string | null][], headers: IncomingHttpHeaders): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, expected] of rules) {
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (value === undefined) errors.push({ field: `headers.${name}`, message: 'is required' });
    // The expected value is not echoed: some use a header as a shared token.
    else if (expected !== null && value !== expected) errors.push({ field: `headers.${name}`, message: 'does not have the required value' });
  }
  return errors;
}
