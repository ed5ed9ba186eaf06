import { withRandomBytes } from '@hookline/signing';

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
  // 80 bits -> 16 base32 chars, 5 bits each.
  const rand = withRandomBytes(10, (bytes, at) => {
    let out = '';
    let acc = 0;
    let bits = 0;
    for (let i = at; i < at + 10; i++) {
      acc = (acc << 8) | bytes[i]!;
      bits += 8;
      while (bits >= 5) {
        bits -= 5;
        out += ALPHABET[(acc >> bits) & 31];
      }
      acc &= (1 << bits) - 1;
    }
    return out;
  });
  return `${prefix}_${time}${rand}`;
}
