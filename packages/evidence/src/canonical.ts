import { hmac, safeEqual } from '@hookline/signing';

export type Scalar = string | number | boolean | null;

/** Canonical bytes of a flat record: keys sorted, JSON values, no whitespace. */
export function canonical(record: Readonly<Record<string, Scalar>>): string {
  return JSON.stringify(Object.fromEntries(Object.keys(record).sort().map((k) => [k, record[k]])));
}

/** HMAC-SHA256 (hex) over the canonical form of everything but `signature`. */
export function signRecord(key: Buffer, record: Readonly<Record<string, Scalar>>): string {
  const { signature: _omit, ...body } = record;
  return hmac('sha256', key, canonical(body)).toString('hex');
}

export function checkSignature(key: Buffer, record: Readonly<Record<string, Scalar>>): boolean {
  const sig = record['signature'];
  return typeof sig === 'string' && safeEqual(sig, signRecord(key, record));
}
