import type { SecretBox } from '@hookline/signing';

/**
 * Opens sealed secrets (AES-GCM) once and keeps the plain text in memory, keyed by the
 * sealed string, so a rotated secret is simply a new key. A secret that does not open
 * (SECRETS_KEY changed) yields null.
 */
export function createSecretCache(box: SecretBox, max = 10_000): (sealed: string) => string | null {
  const cache = new Map<string, string | null>();
  return (sealed) => {
    const hit = cache.get(sealed);
    if (hit !== undefined) return hit;
    let plain: string | null;
    try {
      plain = box.open(sealed);
    } catch {
      plain = null;
    }
    if (cache.size >= max) cache.clear();
    cache.set(sealed, plain);
    return plain;
  };
}
