import { createHmac, timingSafeEqual } from 'node:crypto';

export function hmac(algorithm: 'sha256' | 'sha1', key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const h = createHmac(algorithm, key);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Constant-time comparison of two strings or buffers (false on length mismatch). */
export function safeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const ab = typeof a === 'string' ? Buffer.from(a) : a;
  const bb = typeof b === 'string' ? Buffer.from(b) : b;
  if (ab.length !== bb.length) {
    // Still spend a comparison so that timing does not reveal the length check alone.
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
