/**
 * What counts as a credential, defined once: the api's refusal of secret-looking config keys
 * (ingesters, destinations), the views that redact them, the destination views' credential
 * headers and query parameters, saved payload headers, the audit log's redaction, and every
 * service's log lines (index.ts) use these predicates.
 *
 * Two rules, one strict and one broad:
 *
 * - isSecretLookingKey (a settings key that is refused, since settings are shown in clear)
 *   reads a name as words (`client_secret`, `clientSecret`, `X-Client-Secret` are all
 *   "client secret"; a word run together with a credential word, `clientsecret`,
 *   `authtoken`, `apikey`, `hubsignature256`, is read as the two), so that ordinary names
 *   that merely contain a credential's letters (`author`, `auth_type`, `signature_header`,
 *   `hmac_algorithm`, `session_ttl`, `max_tokens`, `monkey`) are neither refused nor hidden.
 * - isCredentialHeader (a header's or query parameter's value that is write-only) errs
 *   towards hiding: a value shown as "[redacted]" can be sent back to keep it, a credential
 *   shown in clear cannot be taken back. Any name containing auth (not author/authority),
 *   token, secret, passw, pwd, session, cookie, credential, signature, bearer or jwt; any
 *   name with a segment (separators and camelCase split) ending in key(s), sid or sig, or
 *   equal to sess, cred(s) or pass; and every secret-looking key.
 */

/** A credential wherever the word appears: client_secret, db_password, basic_auth_credentials, … */
const ANYWHERE = new Set(['secret', 'secrets', 'password', 'passwords', 'passwd', 'passwort', 'pwd', 'passphrase', 'credential', 'credentials', 'bearer', 'jwt', 'cookie', 'cookies', 'apikey', 'privatekey', 'accesskey', 'secretkey', 'sessionid']);
/** A credential as the last word: access_token, x_signature, sig (a SAS URL's), basicAuth, proxyAuthorization, webhook_hmac. */
const LAST = new Set(['token', 'signature', 'sig', 'hmac', 'auth', 'authorization']);
/** `<kind>_key` is a credential (api_key, consumer_key, shared_key, signing_key), except for these kinds, which name data. */
const DATA_KEYS = new Set(['idempotency', 'routing', 'partition', 'sort', 'dedup', 'dedupe', 'cache', 'lookup', 'public', 'group', 'order', 'ordering', 'primary', 'foreign', 'index', 'hash', 'range', 'object', 'event', 'message', 'correlation']);

/**
 * A word run together with a credential word at its end (the logger's former RUN_TOGETHER
 * endings): `webhooksecret` is "webhook secret", `authtoken` "auth token", `userpassword`
 * "user password", `hubsignature256` "hub signature", `shopifyhmacsha256` "shopify hmac",
 * `signingkey` "signing key". `key` only after a kind that makes it a credential, so that
 * `monkey` or `turkey` stay one word.
 */
const RUN_TOGETHER =
  /^([a-z0-9]*?)(secrets?|token|passw(?:or)?[dt]s?|pwd|passphrase|signature|hmac|credentials?|cookies?|bearer|jwt|(?<=(?:api|private|signing|hmac|cluster|secrets?|evidence|access|client|session|encryption|master|auth|webhook|shared|consumer))key)(?:sha)?\d*$/;

function splitRunTogether(word: string): string[] {
  const m = RUN_TOGETHER.exec(word);
  if (!m || m[0] === m[2]) return [word];
  return m[1] ? [m[1], m[2]!] : [m[2]!];
}

/**
 * The words of a name: camelCase and any separator split, lower-cased, a word run together
 * with a credential word split in two, without trailing digest or version words
 * (`x-hub-signature-256` is a signature, `x-shopify-hmac-sha256` an HMAC, `api_key_2` a key).
 */
function wordsOf(name: string): string[] {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .flatMap(splitRunTogether);
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
 * Letters that make any name a credential's, wherever they appear (`X-Authtoken`,
 * `X-Sessiontoken`, `JSESSIONID`, `X-Passwort`, `X-Authz`): auth, except in author and
 * authority (authorization, authorisation are credentials).
 */
const CREDENTIAL_TEXT = /auth(?!or(?!i[sz]))|token|secret|passw|pwd|passcode|session|cookie|credential|signature|bearer|jwt/;
/**
 * Short credential words, judged by segment so that ordinary words holding their letters
 * stay shown (`X-Side`, `X-Design`, `X-Credit-Limit`, `X-Assessment`, `X-Bypass`): a segment
 * ending in key or keys (`X-Apikey`, `hapikey`, `X-Api-Keys`), sid (`sid`, `PHPSESSID`,
 * `connect.sid`) or sig (a SAS URL's `sig`), or that is sess, cred, creds or pass.
 */
const CREDENTIAL_SEGMENT = /^(?:[a-z0-9]*(?:keys?|sid|sig)|sess|creds?|pass)$/;

/**
 * True when a header's (or a URL query parameter's) value is a credential: write-only, and
 * never carried to another URL origin unseen. Broader than a settings key, erring towards
 * hiding: see the rule at the top of this file.
 */
export function isCredentialHeader(name: string): boolean {
  if (CREDENTIAL_TEXT.test(name.toLowerCase())) return true;
  const segments = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/);
  return segments.some((s) => CREDENTIAL_SEGMENT.test(s)) || isSecretLookingKey(name);
}

/**
 * Query parameters whose whole name makes them a credential in a URL only: Azure Functions'
 * function key (`?code=`), beside every credential header name (`?hapikey=`, `?sid=`,
 * `?sessionid=`, `?apitoken=`).
 */
const CREDENTIAL_QUERY_NAMES = new Set(['code']);

/** True when a URL query parameter's value is a credential (write-only, masked as ****). */
export function isCredentialQueryName(name: string): boolean {
  return CREDENTIAL_QUERY_NAMES.has(name.trim().toLowerCase()) || isCredentialHeader(name);
}
