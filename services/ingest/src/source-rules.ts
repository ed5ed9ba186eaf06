import type { IncomingHttpHeaders } from 'node:http';
import type { FieldError } from '@hookline/errors';
import { safeEqual } from '@hookline/signing';

/** The ingester's required-header rules: present, or equal to the configured value. */
export function checkRequiredHeaders(rules: readonly [string, string | null][], headers: IncomingHttpHeaders): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, expected] of rules) {
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (value === undefined) errors.push({ field: `headers.${name}`, message: 'is required' });
    // Some use a header as a shared token: the expected value is not echoed, and the
    // comparison is constant-time (as for signatures).
    else if (expected !== null && !safeEqual(value, expected)) errors.push({ field: `headers.${name}`, message: 'does not have the required value' });
  }
  return errors;
}
