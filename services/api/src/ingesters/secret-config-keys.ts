import type { FieldError } from '@hookline/errors';

/** What views show instead of a write-only value; a write that sends it back keeps the stored value. */
export const REDACTED = '[redacted]';

/**
 * Config settings of ingesters and destinations are stored and shown in clear, so a key
 * that names a credential is refused: secrets go where they are sealed and write-only
 * (an ingester's signing_secret(s); a destination's signing_secret, mtls.key, credential
 * headers or URL userinfo). One rule for both kinds.
 */
export const SECRET_LOOKING_KEY = /secret|passw|token|private|credential|api[_-]?key|access[_-]?key|^key$/i;

/** A field error per top-level key of `config` that looks like a secret (known settings never do). */
export function secretLookingKeyErrors(config: Record<string, unknown> | undefined, hint: string): FieldError[] {
  return Object.keys(config ?? {})
    .filter((k) => SECRET_LOOKING_KEY.test(k))
    .map((k) => ({ field: `config.${k}`, message: `looks like a secret; ${hint}` }));
}

/** Stored settings as shown: a secret-looking key stored before such keys were refused shows REDACTED. */
export function redactSecretLookingKeys(stored: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, SECRET_LOOKING_KEY.test(k) ? REDACTED : v]));
}
