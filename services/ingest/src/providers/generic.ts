import { parseServiceSignature, verifyServiceSignature } from '@hookline/signing';
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

/**
 * What the signature covers: `t` (as parsed, as verify() signed it) and the body's sha256. A
 * captured request resent within the tolerance window is then a repeat of the original, with
 * or without a fresh Idempotency-Key (which the signature does not cover). The v1 values are
 * left out: an extra or reordered v1 entry would make another id for the same signed content.
 * Only with secrets: otherwise nothing was verified and the request has no signed id.
 */
export function dedupId(ctx: ProviderContext): string | null {
  if (ctx.secrets.length === 0) return null;
  const { t } = parseServiceSignature(header(ctx, 'x-service-signature') ?? '');
  return t === null ? null : `sig:${t}:${ctx.bodySha256()}`;
}

/** A sender's retry is signed afresh (another t, another id): its Idempotency-Key still names the delivery. */
export const idPerSignature = true;
