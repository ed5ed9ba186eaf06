import { hmac, safeEqual } from '@hookline/signing';
import { fail, header, OK, type ProviderContext, type VerifyResult } from './types';

/** X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>. GitHub signs no timestamp. */
export function verify(ctx: ProviderContext): VerifyResult {
  const h = header(ctx, 'x-hub-signature-256');
  if (!h) return fail('missing_header');
  if (!/^sha256=[0-9a-f]{64}$/i.test(h.trim())) return fail('bad_format');
  const given = h.trim().slice(7).toLowerCase();
  const ok = ctx.secrets.some((secret) => safeEqual(given, hmac('sha256', secret, ctx.body).toString('hex')));
  return ok ? OK : fail('signature_mismatch');
}

export const eventType = (ctx: ProviderContext): string | null => header(ctx, 'x-github-event') ?? null;
export const dedupId = (ctx: ProviderContext): string | null => header(ctx, 'x-github-delivery') ?? null;
