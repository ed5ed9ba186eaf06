/**
 * A destination URL's userinfo (https://user:password@host/…) is sent by the deliverer as
 * HTTP Basic credentials, so it is a secret: views show it masked as
 * `https://user:****@host/path` (or `https://****@host/path` when the user name is the only
 * credential, as in `https://api-key@host`, sent as Basic `api-key:`).
 */
export const URL_SECRET_MASK = '****';

const USERINFO = /^(\s*[a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i;

function parse(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/** True when the text starts like a URL that carries userinfo. */
export function hasUserinfo(url: string): boolean {
  return USERINFO.test(url);
}

/** The URL with its credential masked; unchanged when it carries none. */
export function maskUrlCredentials(url: string): string {
  if (!hasUserinfo(url)) return url;
  const u = parse(url);
  if (!u) return url.replace(USERINFO, `$1${URL_SECRET_MASK}@`);
  if (u.password) u.password = URL_SECRET_MASK;
  else if (u.username) u.username = URL_SECRET_MASK;
  else return url;
  return u.href;
}

/** True when the URL carries the mask where its credential would be. */
export function hasMaskedCredentials(url: string): boolean {
  const u = parse(url);
  return u !== null && (u.password === URL_SECRET_MASK || (u.password === '' && u.username === URL_SECRET_MASK));
}

/**
 * A URL sent back with the mask, with the stored credential put back; null unless the
 * stored URL has a credential, the same origin (scheme, host, port) and the same user, so a
 * write cannot send the stored password to another server without knowing it.
 */
export function restoreUrlCredentials(incoming: string, stored: string): string | null {
  const u = parse(incoming);
  const s = parse(stored);
  if (!u || !s || (!s.username && !s.password)) return null;
  const shown = parse(maskUrlCredentials(stored));
  if (!shown || u.origin !== s.origin || u.username !== shown.username || u.password !== shown.password) return null;
  u.username = s.username;
  u.password = s.password;
  return u.href;
}
