import type { FieldError } from '@hookline/errors';
import { MAX_BODY_DEPTH } from '../http/storable-request';
import { isSecretLookingKey } from '@hookline/logger';

/** What views show instead of a write-only value; a write that sends it back keeps the stored value. */
export const REDACTED = '[redacted]';

// Bodies nest at most this deep (deeper ones are refused before this check); a stored row
// deeper than that is not shown past it.
const MAX_DEPTH = MAX_BODY_DEPTH;

export interface SecretKeyCheck {
  /** Top-level settings checked their own way (a destination's headers and mtls). */
  skip?: readonly string[];
  /** PATCH: null removes a key, so a null value carries no secret. */
  allowNull?: boolean;
}

/**
 * Config settings of ingesters and destinations are stored and shown in clear, so a key
 * that names a credential is refused at any depth (the error names its full path, e.g.
 * config.oauth.client_secret): secrets go where they are sealed and write-only (an
 * ingester's signing_secret(s); a destination's signing_secret, mtls.key, credential headers
 * or URL userinfo). One rule for both kinds.
 */
export function secretLookingKeyErrors(config: Record<string, unknown> | undefined, hint: string, check: SecretKeyCheck = {}): FieldError[] {
  const errors: FieldError[] = [];
  const walk = (value: unknown, path: string, depth: number): void => {
    if (value === null || typeof value !== 'object') return;
    if (depth > MAX_DEPTH) {
      errors.push({ field: path, message: `is nested more than ${MAX_DEPTH} levels deep` });
      return;
    }
    for (const [k, v] of Object.entries(value)) {
      if (depth === 0 && check.skip?.includes(k)) continue;
      if (check.allowNull && v === null) continue;
      if (isSecretLookingKey(k)) errors.push({ field: `${path}.${k}`, message: `looks like a secret; ${hint}` });
      else walk(v, `${path}.${k}`, depth + 1);
    }
  };
  walk(config ?? {}, 'config', 0);
  return errors;
}

function redactDeep(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > MAX_DEPTH) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, v !== null && isSecretLookingKey(k) ? REDACTED : redactDeep(v, depth + 1)]));
}

/** Stored settings as shown: a secret-looking key (any depth) stored before such keys were refused shows REDACTED. */
export function redactSecretLookingKeys(stored: Record<string, unknown>): Record<string, unknown> {
  return redactDeep(stored, 0) as Record<string, unknown>;
}
