import { verifyServiceSignature } from '@hookline/signing';
import { getStringAt } from '@hookline/http';
import { header, type ProviderContext, type VerifyResult } from './types';

/**
 * Hookline's own scheme: X-Service-Signature `t=<unix>,v1=<hex HMAC-SHA256(secret,
 * "<t>.<raw body>")>` (several v1 allowed) plus X-Service-Timestamp equal to t, required
 * (SPEC.md: the HMAC method is the signature "plus X-Service-Timestamp"), as on the
 * cluster endpoints.
 */
export function verify(ctx: ProviderContext): VerifyResult {
  return verifyServiceSignature([...ctx.secrets], ctx.body, header(ctx, 'x-service-signature'), header(ctx, 'x-service-timestamp'), ctx.toleranceSeconds, ctx.nowSeconds, { requireTimestampHeader: true });
}

/** Generic sources name their type where they like: `event_type_path` overrides this default. */
export const eventType = (ctx: ProviderContext): string | null => getStringAt(ctx.json(), '$.type');
export const dedupId = (): string | null => null;
