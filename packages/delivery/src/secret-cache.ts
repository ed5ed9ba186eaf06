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

/**
 * A destination's secrets opened, or null when any one does not open (a wrong SECRETS_KEY):
 * a request is then not sent at all, never unsigned or signed with only some of them.
 */
export function openSecrets(open: (sealed: string) => string | null, sealed: readonly string[] | null): string[] | null {
  const plain = (sealed ?? []).map(open);
  return plain.every((s): s is string => s !== null) ? plain : null;
}
