import { hmac, safeEqual, whsecKey } from '@hookline/signing';
import { bodyString, fail, header, OK, type ProviderContext, type VerifyResult } from './types';

/**
 * webhook-id, webhook-timestamp (unix seconds) and webhook-signature: space-separated
 * `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`, the key being the
 * base64 after `whsec_`. The timestamp is checked first, as the reference libraries do;
 * any v1 signature may match; other versions (v1a, …) are skipped.
 */
export function verify(ctx: ProviderContext): VerifyResult {
  const id = header(ctx, 'webhook-id');
  const ts = header(ctx, 'webhook-timestamp');
  const sig = header(ctx, 'webhook-signature');
  if (!id || !ts || !sig) return fail('missing_header');
  if (!/^\d+$/.test(ts.trim())) return fail('bad_format');
  const sigs = sig
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => s.slice(3));
  if (sigs.length === 0) return fail('bad_format');
  if (Math.abs(ctx.nowSeconds - Number(ts.trim())) > ctx.toleranceSeconds) return fail('timestamp_out_of_tolerance');
  const ok = ctx.secrets.some((secret) => {
    const expected = hmac('sha256', whsecKey(secret), `${id}.${ts.trim()}.`, ctx.body).toString('base64');
    return sigs.some((s) => safeEqual(s, expected));
  });
  return ok ? OK : fail('signature_mismatch');
}

export const eventType = (ctx: ProviderContext): string | null => bodyString(ctx, 'type');
export const dedupId = (ctx: ProviderContext): string | null => header(ctx, 'webhook-id') ?? null;
