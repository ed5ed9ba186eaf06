import { randomFillSync } from 'node:crypto';

// Random bytes for identifiers (ids, request ids, trace ids), drawn from a pooled buffer
// refilled 4 KB at a time: `randomBytes(10)` per id was 4–9 % of each service's CPU in
// the benchmark, one call into OpenSSL per id. Node pools `randomUUID` the same way.
// Not for secrets: those keep their own `randomBytes` (a pool's bytes live in memory
// until overwritten).
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

/** Calls `use` with the pool and the offset of `n` fresh random bytes, valid only during the call. */
export function withRandomBytes<T>(n: number, use: (bytes: Buffer, offset: number) => T): T {
  if (n > POOL_SIZE) throw new RangeError(`at most ${POOL_SIZE} pooled random bytes at a time`);
  if (offset + n > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const at = offset;
  offset += n;
  return use(pool, at);
}

/** `n` fresh random bytes as a string in `encoding` (identifiers, not secrets). */
export function randomIdString(n: number, encoding: 'hex' | 'base64url'): string {
  return withRandomBytes(n, (bytes, at) => bytes.toString(encoding, at, at + n));
}
