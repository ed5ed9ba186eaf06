import { hmac, safeEqual } from '@hookline/signing';
import { bodyString, fail, header, OK, type ProviderContext, type VerifyResult } from './types';

/**
 * Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>][,v0=…]. The signed payload is
 * "<t>.<raw body>", HMAC-SHA256 keyed with the whole endpoint secret (`whsec_…` as
 * text), hex. Any v1 may match; the timestamp is then checked against the tolerance.
 */
export function verify(ctx: ProviderContext): VerifyResult {
  const h = header(ctx, 'stripe-signature');
  if (!h) return fail('missing_header');
  let t: string | null = null;
  const v1: string[] = [];
  for (const part of h.split(',')) {
    const [k, v] = part.split('=', 2).map((x) => x.trim());
    if (k === 't' && v && /^\d+$/.test(v)) t = v;
    else if (k === 'v1' && v) v1.push(v);
  }
  if (t === null || v1.length === 0) return fail('bad_format');
  const matched = ctx.secrets.some((secret) => {
    const expected = hmac('sha256', secret, `${t}.`, ctx.body).toString('hex');
    return v1.some((s) => safeEqual(s, expected));
  });
  if (!matched) return fail('signature_mismatch');
  if (Math.abs(ctx.nowSeconds - Number(t)) > ctx.toleranceSeconds) return fail('timestamp_out_of_tolerance');
  return OK;
}

export const eventType = (ctx: ProviderContext): string | null => bodyString(ctx, 'type');
export const dedupId = (ctx: ProviderContext): string | null => bodyString(ctx, 'id');
