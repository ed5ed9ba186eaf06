/**
 * What counts as a credential, defined once: the api's refusal of secret-looking config keys
 * (ingesters, destinations), the views that redact them, the destination views' credential
 * headers and query parameters, the audit log's redaction, and every service's log lines
 * (index.ts) use these two predicates.
 *
 * A name is read as words (`client_secret`, `clientSecret`, `X-Client-Secret` are all
 * "client secret"), so that ordinary names that merely contain a credential's letters
 * (`author`, `auth_type`, `signature_header`, `hmac_algorithm`, `session_ttl`, `max_tokens`,
 * `monkey`) are neither refused nor hidden, while every spelling of a credential is.
 */

/** A credential wherever the word appears: client_secret, db_password, basic_auth_credentials, … */
const ANYWHERE = new Set(['secret', 'secrets', 'password', 'passwd', 'pwd', 'passphrase', 'credential', 'credentials', 'bearer', 'jwt', 'cookie', 'cookies', 'apikey', 'privatekey', 'accesskey', 'secretkey']);
/** A credential as the last word: access_token, x_signature, sig (a SAS URL's), basicAuth, proxyAuthorization, webhook_hmac. */
const LAST = new Set(['token', 'signature', 'sig', 'hmac', 'auth', 'authorization']);
/** `<kind>_key` is a credential (api_key, consumer_key, shared_key, signing_key), except for these kinds, which name data. */
const DATA_KEYS = new Set(['idempotency', 'routing', 'partition', 'sort', 'dedup', 'dedupe', 'cache', 'lookup', 'public', 'group', 'order', 'ordering', 'primary', 'foreign', 'index', 'hash', 'range', 'object', 'event', 'message', 'correlation']);

/**
 * The words of a name: camelCase and any separator split, lower-cased, without trailing
 * digest or version words (`x-hub-signature-256` is a signature, `x-shopify-hmac-sha256` an
 * HMAC, `api_key_2` a key).
 */
function wordsOf(name: string): string[] {
  const words = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  while (words.length > 1 && /^(?:v?\d+|sha\d*)$/.test(words[words.length - 1]!)) words.pop();
  return words;
}

/** True when a settings or parameter key names a credential. */
export function isSecretLookingKey(key: string): boolean {
  const w = wordsOf(key);
  const last = w[w.length - 1];
  const before = w[w.length - 2];
  if (last === undefined) return false;
  if (w.some((x) => ANYWHERE.has(x)) || LAST.has(last)) return true;
  if (last === 'key') return before === undefined || !DATA_KEYS.has(before);
  // session_id, auth_header, authorization_value: the credential named by its carrier.
  if (last === 'id' && before === 'session') return true;
  return (last === 'header' || last === 'value') && (before === 'auth' || before === 'authorization' || before === 'token');
}

/**
 * True when a header's (or a URL query parameter's) value is a credential: write-only, and
 * never carried to another URL origin unseen. Broader than a settings key: any name with
 * the word auth, authorization, authentication, key, apikey or token (x-auth-user, x-api-key,
 * x-mcp-key, x-token-id).
 */
export function isCredentialHeader(name: string): boolean {
  return isSecretLookingKey(name) || wordsOf(name).some((x) => CREDENTIAL_HEADER_WORDS.has(x));
}
const CREDENTIAL_HEADER_WORDS = new Set(['auth', 'authorization', 'authentication', 'key', 'apikey', 'token']);
