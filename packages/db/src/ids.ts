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

/** The 10-character time part of an id made at `ms` (48-bit milliseconds, base32). */
export function idTime(ms: number): string {
  let time = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time;
}

/** The largest time an id can carry (48 bits of milliseconds, year 10889). */
const MAX_ID_MS = 2 ** 48 - 1;

/**
 * The id bound of a time: every id of `prefix` made at `ms` or later sorts at or above it,
 * every one made before it sorts below (the time part leads, and this is the time part
 * alone, without the random part). So `id >= idFloor(p, t)` keeps the ids made from `t` on
 * and `id < idFloor(p, t)` those made before it, in an index on id (or (tenant_id, id)).
 * A time before the epoch is the epoch's bound (below every id), one past the 48 bits the
 * last one.
 */
export function idFloor(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${idTime(Math.min(Math.max(0, Math.floor(ms)), MAX_ID_MS))}`;
}

/** 80 random bits as 16 base32 characters. */
function randomPart(): string {
  return withRandomBytes(10, (bytes, at) => {
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
}

/** The base32 number plus one, or null when every character was the last one ('z'). */
export function incrementIdPart(part: string): string | null {
  for (let i = part.length - 1; i >= 0; i--) {
    const d = ALPHABET.indexOf(part[i]!);
    if (d < 31) return part.slice(0, i) + ALPHABET[d + 1] + '0'.repeat(part.length - i - 1);
  }
  return null;
}

// The last id this process made from the clock: ids of the same millisecond (or of a clock
// that stepped back) continue from it, so a process's ids sort in the order it made them.
let lastMs = -1;
let lastPart = '';

/**
 * `<prefix>_<10 chars time><16 chars random>`: 48-bit millisecond time then 80 random
 * bits, so ids sort by creation time (cursor pagination and "newest first" use that).
 * Within one process they are strictly increasing, as ULIDs' monotonic mode: an id made in
 * the same millisecond as the previous one (or after the clock stepped back) keeps that
 * time and adds one to its random part. Ids made by several processes in one millisecond
 * sort by their random parts. With `at` (a given time, e.g. the lower bound of a time
 * range) the id takes that time and fresh random bits, and leaves the sequence alone.
 */
export function newId(prefix: IdPrefix, at?: number): string {
  if (at !== undefined) return `${prefix}_${idTime(at)}${randomPart()}`;
  const now = Date.now();
  const next = now > lastMs ? null : incrementIdPart(lastPart);
  if (next !== null) {
    lastPart = next;
  } else {
    // A new millisecond, or (in theory) 2^80 ids in one: move on to the next.
    lastMs = now > lastMs ? now : lastMs + 1;
    lastPart = randomPart();
  }
  return `${prefix}_${idTime(lastMs)}${lastPart}`;
}
