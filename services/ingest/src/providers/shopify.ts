import { hmac, safeEqual } from '@hookline/signing';
import { fail, header, OK, type ProviderContext, type VerifyResult } from './types';

// Shopify sends `X-Shopify-*` headers, and the same names without `X-` on newer API versions.
const either = (ctx: ProviderContext, name: string): string | undefined => header(ctx, `x-shopify-${name}`) ?? header(ctx, `shopify-${name}`);

/** X-Shopify-Hmac-Sha256: base64 HMAC-SHA256(app secret, raw body). No timestamp is signed. */
export function verify(ctx: ProviderContext): VerifyResult {
  const h = either(ctx, 'hmac-sha256');
  if (!h) return fail('missing_header');
  const given = h.trim();
  if (!/^[A-Za-z0-9+/]{43}=$/.test(given)) return fail('bad_format');
  const ok = ctx.secrets.some((secret) => safeEqual(given, hmac('sha256', secret, ctx.body).toString('base64')));
  return ok ? OK : fail('signature_mismatch');
}

export const eventType = (ctx: ProviderContext): string | null => either(ctx, 'topic') ?? null;
export const dedupId = (ctx: ProviderContext): string | null => either(ctx, 'webhook-id') ?? null;
