import { hmac, safeEqual, whsecKey, WHSEC_MIN_BYTES } from '@hookline/signing';
import { bodyString, fail, header, OK, type ProviderContext, type VerifyResult } from './types';

const warnedIngesters = new Set<string>();

/**
 * Once per ingester (per process): the secret is named by its position only, never shown.
 * The API refuses such secrets on write; this is for secrets stored before that check.
 */
function warnShortKeys(ctx: ProviderContext, positions: number[]): void {
  const ingesterId = ctx.ingesterId;
  if (warnedIngesters.has(ingesterId)) return;
  warnedIngesters.add(ingesterId);
  ctx.logger.warn('standard-webhooks signing secret decodes to too short a key; it never verifies: set a new one (whsec_ + base64 of 24 to 64 bytes)', {
    ingester_id: ingesterId,
    secret_positions: positions,
    min_key_bytes: WHSEC_MIN_BYTES,
  });
}

/**
 * webhook-id, webhook-timestamp (unix seconds) and webhook-signature: space-separated
 * `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`, the key being the
 * base64 after `whsec_`. The timestamp is checked first, as the reference libraries do;
 * any v1 signature may match; other versions (v1a, …) are skipped.
 *
 * Fails closed on short keys: a secret whose key decodes to fewer than 24 bytes (stored
 * before the API checked them; `'!!!!…'` decodes to none, and an HMAC with an empty key is
 * anyone's to compute) never verifies, so a request only it would match is refused as
 * `signature_mismatch`; another (rotated) secret of the ingester still verifies.
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
  const keys = ctx.secrets.map((secret) => whsecKey(secret));
  const short = keys.flatMap((key, i) => (key.length < WHSEC_MIN_BYTES ? [i] : []));
  if (short.length > 0) warnShortKeys(ctx, short);
  const ok = keys.some((key) => {
    if (key.length < WHSEC_MIN_BYTES) return false;
    const expected = hmac('sha256', key, `${id}.${ts.trim()}.`, ctx.body).toString('base64');
    return sigs.some((s) => safeEqual(s, expected));
  });
  return ok ? OK : fail('signature_mismatch');
}

export const eventType = (ctx: ProviderContext): string | null => bodyString(ctx, 'type');
export const dedupId = (ctx: ProviderContext): string | null => header(ctx, 'webhook-id') ?? null;
