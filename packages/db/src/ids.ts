import { randomBytes } from 'node:crypto';

/** Prefixes, so an id says what it names (Svix style). Never rename one. */
export const ID_PREFIXES = {
  tenant: 'ten',
  user: 'usr',
  apiKey: 'key',
  ingester: 'ing',
  destination: 'dst',
  flow: 'flw',
  event: 'evt',
  delivery: 'dlv',
  attempt: 'att',
  rejection: 'rej',
  cluster: 'cls',
  savedPayload: 'spl',
  audit: 'aud',
  request: 'req',
  receipt: 'rcp',
  merkleRoot: 'mrk',
} as const;

export type IdPrefix = (typeof ID_PREFIXES)[keyof typeof ID_PREFIXES];

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

/**
 * `<prefix>_<10 chars time><16 chars random>`: 48-bit millisecond time then 80 random
 * bits, so ids sort by creation time (cursor pagination and "newest first" use that).
 */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  // 80 bits -> 16 base32 chars, 5 bits each.
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      rand += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${rand}`;
}
