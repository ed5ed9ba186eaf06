import { isCredentialQueryName } from '@hookline/logger';

/**
 * A destination URL's userinfo (https://user:password@host/…) is sent by the deliverer as
 * HTTP Basic credentials, so it is a secret: views show it masked as
 * `https://user:****@host/path` (or `https://****@host/path` when the user name is the only
 * credential, as in `https://api-key@host`, sent as Basic `api-key:`). So are the values of
 * query parameters named as credentials (isCredentialQueryName, @hookline/logger: the
 * credential-header rule, access_token, api_key, apitoken, sessionid, sid, …, plus `code`,
 * an Azure Functions key): `?access_token=****`, name and the rest of the URL as given.
 */
export const URL_SECRET_MASK = '****';

// Only for text the URL parser refuses: a scheme, any slashes (or backslashes), then
// userinfo before the host. Everything else is judged as Node's URL (and so the deliverer)
// parses it: `https:///alice:pw@host` carries the user alice and the password pw.
const USERINFO = /^(\s*[a-z][a-z0-9+.-]*:[/\\]*)[^/\\?#]*@/i;

function parse(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

const carriesCredential = (u: URL): boolean => u.username !== '' || u.password !== '';

/** The query text (after the first `?`, before the fragment) split into its `&` pieces; null when there is none. */
function queryParts(url: string): { before: string; parts: string[]; after: string } | null {
  const q = url.indexOf('?');
  const hash = url.indexOf('#');
  if (q < 0 || (hash >= 0 && hash < q)) return null;
  const end = hash < 0 ? url.length : hash;
  return { before: url.slice(0, q + 1), parts: url.slice(q + 1, end).split('&'), after: url.slice(end) };
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/** The value of a `name=value` piece when its name is a credential and it has one; else null. */
function credentialValue(part: string): string | null {
  const eq = part.indexOf('=');
  if (eq <= 0 || eq === part.length - 1) return null;
  return isCredentialQueryName(decodedName(part.slice(0, eq))) ? part.slice(eq + 1) : null;
}

/** The text with each credential query value replaced by the mask; everything else as given. */
function maskQueryCredentials(url: string): string {
  const q = queryParts(url);
  if (!q || !q.parts.some((p) => credentialValue(p) !== null)) return url;
  const parts = q.parts.map((p) => (credentialValue(p) === null ? p : `${p.slice(0, p.indexOf('='))}=${URL_SECRET_MASK}`));
  return `${q.before}${parts.join('&')}${q.after}`;
}

const hasQueryCredentials = (url: string): boolean => queryParts(url)?.parts.some((p) => credentialValue(p) !== null) ?? false;
const hasMaskedQuery = (url: string): boolean => queryParts(url)?.parts.some((p) => credentialValue(p) === URL_SECRET_MASK) ?? false;
const hasMaskedUserinfo = (u: URL): boolean => u.password === URL_SECRET_MASK || (u.password === '' && u.username === URL_SECRET_MASK);

/** True when the URL carries userinfo (a user name, a password or both). */
export function hasUserinfo(url: string): boolean {
  const u = parse(url);
  return u ? carriesCredential(u) : USERINFO.test(url);
}

/** True when the URL carries a credential: userinfo, or a credential query value. */
export function hasUrlCredentials(url: string): boolean {
  return hasUserinfo(url) || hasQueryCredentials(url);
}

/** The URL with its credentials (userinfo, credential query values) masked; unchanged when it carries none. */
export function maskUrlCredentials(url: string): string {
  return maskQueryCredentials(maskUserinfo(url));
}

function maskUserinfo(url: string): string {
  const u = parse(url);
  if (!u) return USERINFO.test(url) ? url.replace(USERINFO, `$1${URL_SECRET_MASK}@`) : url;
  if (!carriesCredential(u)) return url;
  if (u.password) u.password = URL_SECRET_MASK;
  else u.username = URL_SECRET_MASK;
  return u.href;
}

/** A URL carrying a credential as parsed (`new URL(url).href`); any other text unchanged. */
export function normaliseCredentialUrl(url: string): string {
  const u = parse(url);
  return u && carriesCredential(u) ? u.href : url;
}

/** True when the URL carries the mask where a credential would be (userinfo or a credential query value). */
export function hasMaskedCredentials(url: string): boolean {
  const u = parse(url);
  return u !== null && (hasMaskedUserinfo(u) || hasMaskedQuery(url));
}

const withoutUserinfo = (u: URL): string => {
  const c = new URL(u.href);
  c.username = '';
  c.password = '';
  return c.href;
};

/**
 * A URL sent back with the mask, with the stored credentials put back; null unless the
 * stored URL has them for the same origin (scheme, host, port), so a write cannot send them
 * to another server without knowing them. A masked userinfo also needs the same user (path
 * and query may change); masked query values need everything else in the URL (path, the
 * query as a view shows it, fragment) unchanged, userinfo aside.
 */
export function restoreUrlCredentials(incoming: string, stored: string): string | null {
  const u = parse(incoming);
  const s = parse(stored);
  const shown = parse(maskUrlCredentials(stored));
  if (!u || !s || !shown || u.origin !== s.origin) return null;
  if (hasMaskedUserinfo(u)) {
    if (!carriesCredential(s) || u.username !== shown.username || u.password !== shown.password) return null;
    u.username = s.username;
    u.password = s.password;
  }
  if (!hasMaskedQuery(u.href)) return u.href;
  if (withoutUserinfo(u) !== withoutUserinfo(shown)) return null;
  if (u.username === s.username && u.password === s.password) return stored;
  s.username = u.username;
  s.password = u.password;
  return s.href;
}
