import type { FieldError } from '@hookline/errors';
import { parseCidr } from '@hookline/http';

/**
 * Allowlist entries are checked with the parser ingest enforces them with (parseCidr), so
 * what the API accepts is exactly what ingest applies: an entry ingest could not parse
 * would match nothing there, silently shortening the list (or, alone, refusing all traffic).
 */
export function ipAllowlistErrors(list: readonly unknown[] | undefined, field = 'config.ip_allowlist'): FieldError[] {
  const errors: FieldError[] = [];
  (list ?? []).forEach((entry, i) => {
    if (typeof entry !== 'string' || !parseCidr(entry)) {
      errors.push({ field: `${field}.${i}`, message: 'is not an IP address or CIDR range (a.b.c.d, a.b.c.d/0-32, an IPv6 address, or x::y/0-128)' });
    }
  });
  return errors;
}

function entries(list: unknown): string[] {
  return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string').map((x) => x.trim()) : [];
}

/** True when both lists hold the same entries (order and surrounding blanks aside). */
export function sameAllowlist(a: unknown, b: unknown): boolean {
  const x = new Set(entries(a));
  const y = new Set(entries(b));
  return x.size === y.size && [...x].every((e) => y.has(e));
}
