import { createHash } from 'node:crypto';
import { hmac, safeEqual } from '@hookline/signing';
import { bodyString, fail, header, OK, type ProviderContext, type VerifyResult } from './types';

/**
 * X-Twilio-Signature: base64 HMAC-SHA1(auth token, <full URL> + each form parameter
 * as key+value, keys sorted). For any other body Twilio adds `bodySHA256=<hex sha256 of
 * the body>` to the URL's query as its last parameter and signs that full URL alone; the
 * body must hash to it (Twilio's validateRequestWithBody).
 *
 * URL and parameters are concatenated without separators, so a signature says nothing about
 * where the URL ends: were any suffix after `/in/<id>` accepted, a captured callback could be
 * resent with signed parameters moved into the path or query (dropped from the body, or a
 * bodySHA256 smuggled in through a parameter's value so that the URL alone seems signed).
 * So the suffix, less a trailing bodySHA256 parameter, must be one the customer gave Twilio
 * (config.twilio_url_suffixes, default the bare hook URL), and only that trailing parameter
 * switches to URL-only signing. A non-form or empty body without it is refused: its
 * signature would cover the URL alone; so is a form whose first key starts with `?` or `&`
 * (no Twilio parameter does), which would pass for a URL-only signature's query. Like Twilio's helpers, the URL is tried with and
 * without an explicit port (proxies differ in what they report).
 */
export function verify(ctx: ProviderContext): VerifyResult {
  const given = header(ctx, 'x-twilio-signature')?.trim();
  if (!given) return fail('missing_header');
  if (!/^[A-Za-z0-9+/]{27}=$/.test(given)) return fail('bad_format');
  const { configured, bodyHash } = splitBodyHash(ctx.hookSuffix);
  if (!ctx.twilioUrlSuffixes.includes(configured)) return fail('signature_mismatch');
  if (bodyHash === null && (!isForm(ctx) || ctx.body.length === 0)) return fail('signature_mismatch');
  const signed = bodyHash !== null ? '' : formString(ctx);
  // A first key of `?bodySHA256…` or `&bodySHA256…` would make URL + form string read as a
  // URL-only signature's `URL?bodySHA256=<hex>`: a captured JSON callback resent as a form.
  if (/^[?&]/.test(signed)) return fail('signature_mismatch');
  const ok = ctx.secrets.some((token) => urlVariants(ctx.url).some((url) => safeEqual(given, hmac('sha1', token, url, signed).toString('base64'))));
  if (!ok) return fail('signature_mismatch');
  if (bodyHash !== null && !safeEqual(bodyHash.toLowerCase(), createHash('sha256').update(ctx.body).digest('hex'))) return fail('signature_mismatch');
  return OK;
}

/** `bodySHA256=<64 hex>` as the query's last parameter (first, or after `&`): where Twilio appends it. */
const TRAILING_BODY_HASH = /(?:^\?|&)bodySHA256=([0-9A-Fa-f]{64})$/;

/** The hook URL suffix as configured (without Twilio's trailing bodySHA256 parameter), and that hash. */
export function splitBodyHash(suffix: string): { configured: string; bodyHash: string | null } {
  const q = suffix.indexOf('?');
  const m = q < 0 ? null : TRAILING_BODY_HASH.exec(suffix.slice(q));
  return m ? { configured: suffix.slice(0, q + m.index), bodyHash: m[1]! } : { configured: suffix, bodyHash: null };
}

function isForm(ctx: ProviderContext): boolean {
  return (header(ctx, 'content-type') ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
}

function formParams(ctx: ProviderContext): URLSearchParams {
  return new URLSearchParams(isForm(ctx) ? ctx.body.toString('utf8') : '');
}

/** key+value of every form parameter, keys sorted, a repeated key's values sorted. */
export function formString(ctx: ProviderContext): string {
  const params = formParams(ctx);
  return [...new Set(params.keys())]
    .sort()
    .map((k) => params.getAll(k).sort().map((v) => k + v).join(''))
    .join('');
}

/** The URL as given, without its port, and with the scheme's default port spelled out. */
export function urlVariants(url: string): string[] {
  const m = /^(https?):\/\/([^/?#]+)(.*)$/is.exec(url);
  if (!m) return [url];
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  const hasPort = /:\d+$/.test(authority);
  const bare = authority.replace(/:\d+$/, '');
  const withPort = hasPort ? authority : `${authority}:${scheme.toLowerCase() === 'https' ? 443 : 80}`;
  return [...new Set([url, `${scheme}://${bare}${rest}`, `${scheme}://${withPort}${rest}`])];
}

const TYPE_PARAMS = ['EventType', 'StatusCallbackEvent', 'MessageStatus', 'SmsStatus', 'CallStatus'];

/** Twilio has no single event type; the first of the usual status parameters stands in. */
export function eventType(ctx: ProviderContext): string | null {
  const params = formParams(ctx);
  for (const p of TYPE_PARAMS) {
    const v = isForm(ctx) ? params.get(p) : bodyString(ctx, p);
    if (v) return v;
  }
  return null;
}

export const dedupId = (ctx: ProviderContext): string | null => header(ctx, 'i-twilio-idempotency-token') ?? null;
