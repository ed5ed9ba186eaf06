import { createHash } from 'node:crypto';
import { hmac, safeEqual } from '@hookline/signing';
import { bodyString, fail, header, OK, type ProviderContext, type VerifyResult } from './types';

/**
 * X-Twilio-Signature: base64 HMAC-SHA1(auth token, <full URL> + each form parameter
 * as key+value, keys sorted). For any other body Twilio adds `bodySHA256=<hex sha256 of
 * the body>` to the URL's query and signs that full URL alone; the body must hash to it
 * (Twilio's validateRequestWithBody). A request whose signature would cover the URL alone
 * while its body goes unauthenticated is refused: a non-form body without bodySHA256, and
 * an empty body without it (hook paths take any suffix, so a captured signature over
 * URL + form parameters could be replayed with the parameters moved into the path).
 * Like Twilio's helpers, the URL is tried with and without an explicit port (proxies
 * differ in what they report).
 */
export function verify(ctx: ProviderContext): VerifyResult {
  const given = header(ctx, 'x-twilio-signature')?.trim();
  if (!given) return fail('missing_header');
  if (!/^[A-Za-z0-9+/]{27}=$/.test(given)) return fail('bad_format');
  const query = new URLSearchParams(ctx.url.includes('?') ? ctx.url.slice(ctx.url.indexOf('?') + 1) : '');
  const bodyHash = query.get('bodySHA256');
  if (bodyHash === null && (!isForm(ctx) || ctx.body.length === 0)) return fail('signature_mismatch');
  const signed = bodyHash !== null ? '' : formString(ctx);
  const ok = ctx.secrets.some((token) => urlVariants(ctx.url).some((url) => safeEqual(given, hmac('sha1', token, url, signed).toString('base64'))));
  if (!ok) return fail('signature_mismatch');
  if (bodyHash !== null && !safeEqual(bodyHash.toLowerCase(), createHash('sha256').update(ctx.body).digest('hex'))) return fail('signature_mismatch');
  return OK;
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
