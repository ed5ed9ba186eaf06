import type { FieldError } from '@hookline/errors';
import { isCredentialHeader } from '@hookline/logger';
import { REDACTED } from '../ingesters/secret-config-keys';
import { asObject } from './format';

/**
 * Header maps whose credential values are write-only once stored: a destination's
 * `config.headers` (sent with each delivery) and a saved payload's `headers`. Which names
 * are credentials: isCredentialHeader (@hookline/logger, secret-names.ts). Views show
 * REDACTED for those; a write that sends REDACTED back keeps the stored value.
 */

/** The rule (isCredentialHeader) as the OpenAPI descriptions state it. */
export const CREDENTIAL_NAMES =
  'names containing auth (but not author or authority), token, secret, passw, pwd, passcode, session, cookie, credential, signature, bearer or jwt, in any case and whether or not run together (X-Authtoken, X-Webhooksecret, JSESSIONID); names with a segment (split at separators and camelCase) ending in key, keys, sid or sig, or that is sess, cred, creds or pass (X-Api-Key, X-Apikey, PHPSESSID, connect.sid); and names ending in hmac';

export const NOTHING_STORED = 'is the redaction placeholder and there is no stored value to keep';

/** Headers as shown: each credential header's value is REDACTED, every other one as stored. */
export function shownHeaders(headers: unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(asObject(headers)).map(([name, value]) => [name, isCredentialHeader(name) ? REDACTED : value]));
}

/**
 * The headers a write stores: each REDACTED placeholder replaced by the stored value of the
 * header of that name (as a view showed it); a placeholder with no stored string to keep is
 * an error naming `<field>.<Name>` (NOTHING_STORED). `check` may refuse a kept value for
 * the writer's own reasons (a destination's origin or cluster move, an unsendable value):
 * it returns the message, or null to keep it.
 */
export function keepRedactedHeaders(
  headers: Record<string, unknown>,
  stored: Record<string, unknown>,
  field: string,
  errors: FieldError[],
  check: (kept: string) => string | null = () => null,
): Record<string, unknown> {
  const keptFor = (name: string): unknown => (Object.hasOwn(stored, name) ? stored[name] : undefined);
  const entries = Object.entries(headers);
  for (const [name, value] of entries) {
    if (value !== REDACTED) continue;
    const kept = keptFor(name);
    const problem = typeof kept !== 'string' ? NOTHING_STORED : check(kept);
    if (problem) errors.push({ field: `${field}.${name}`, message: problem });
  }
  return Object.fromEntries(entries.map(([name, value]) => [name, value === REDACTED ? keptFor(name) : value]));
}
