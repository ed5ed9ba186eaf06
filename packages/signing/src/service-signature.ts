import { hmac, safeEqual } from './hmac';

/**
 * Hookline's own signature, used inbound (generic ingesters, cluster requests) and
 * outbound (deliveries):
 *   X-Service-Timestamp: <unix seconds>
 *   X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key, "<t>.<raw body>")>[,v1=…]
 * Several v1= entries may be present (secret rotation); any match is accepted. Given
 * several keys, one v1= per key, in that order (deliveries put the newest last).
 */
export function signServiceRequest(
  keys: string | Buffer | readonly (string | Buffer)[],
  body: Buffer | string,
  timestamp = Math.floor(Date.now() / 1000),
): { 'x-service-timestamp': string; 'x-service-signature': string } {
  const list: readonly (string | Buffer)[] = typeof keys === 'string' || Buffer.isBuffer(keys) ? [keys] : keys;
  const sigs = list.map((key) => `,v1=${hmac('sha256', key, `${timestamp}.`, body).toString('hex')}`);
  return { 'x-service-timestamp': String(timestamp), 'x-service-signature': `t=${timestamp}${sigs.join('')}` };
}

export function parseServiceSignature(header: string): { t: number | null; v1: string[] } {
  let t: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const idx = part.indexOf('=');
    if (idx < 0) continue;
    const k = part.slice(0, idx).trim();
    const v = part.slice(idx + 1).trim();
    if (k === 't' && /^\d+$/.test(v)) t = Number(v);
    else if (k === 'v1') v1.push(v);
  }
  return { t, v1 };
}

export type VerifyResult = { ok: true } | { ok: false; reason: 'missing_header' | 'bad_format' | 'timestamp_out_of_tolerance' | 'signature_mismatch' };

export interface VerifyServiceSignatureOptions {
  /**
   * Refuse a request without `X-Service-Timestamp` (`missing_header`). Off by default:
   * generic ingest sources may send `t=` in the signature alone (services/ingest/README.md);
   * cluster-signed requests to the api must send both headers (SPEC.md Authentication).
   */
  requireTimestampHeader?: boolean;
}

/**
 * `X-Service-Timestamp`, when present (always, with `requireTimestampHeader`), must equal
 * the signature's `t`; `t` must lie within `toleranceSeconds` of now, in both directions.
 * This checks a signature only: it does not make it single-use (callers that must refuse a
 * replayed request within the window keep a record of what they accepted).
 */
export function verifyServiceSignature(
  keys: (string | Buffer)[],
  body: Buffer,
  signatureHeader: string | undefined,
  timestampHeader: string | undefined,
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
  options: VerifyServiceSignatureOptions = {},
): VerifyResult {
  if (!signatureHeader) return { ok: false, reason: 'missing_header' };
  if (options.requireTimestampHeader && !timestampHeader) return { ok: false, reason: 'missing_header' };
  const { t, v1 } = parseServiceSignature(signatureHeader);
  if (t === null || v1.length === 0) return { ok: false, reason: 'bad_format' };
  if (timestampHeader !== undefined && timestampHeader !== String(t)) return { ok: false, reason: 'bad_format' };
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return { ok: false, reason: 'timestamp_out_of_tolerance' };
  for (const key of keys) {
    const expected = hmac('sha256', key, `${t}.`, body).toString('hex');
    // Hex is case-insensitive: some HMAC libraries write it in upper case (.NET's Convert.ToHexString).
    if (v1.some((s) => safeEqual(s.toLowerCase(), expected))) return { ok: true };
  }
  return { ok: false, reason: 'signature_mismatch' };
}
