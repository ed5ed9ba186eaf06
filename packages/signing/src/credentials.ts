import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number, opts: { N: number; r: number; p: number }) => Promise<Buffer>;

/**
 * Every API scope. Groups have a read/write pair; MCP scopes are separate
 * (SPEC.md, Authentication). Never rename one: stored keys carry these strings.
 */
export const API_SCOPES = [
  'read:ingesters', 'write:ingesters',
  'read:destinations', 'write:destinations',
  'read:flows', 'write:flows',
  'read:deliveries', 'write:deliveries',
  'read:events', 'write:events',
  'read:saved-payloads', 'write:saved-payloads',
  'read:api-keys', 'write:api-keys',
  'read:clusters', 'write:clusters',
  'read:evidence', 'read:audit',
] as const;

export const MCP_SCOPES = [
  'mcp:read:health', 'mcp:read:endpoints', 'mcp:read:evidence', 'mcp:read:deliveries',
  'mcp:read:planes', 'mcp:read:logs', 'mcp:admin:keys',
] as const;

export type Scope = (typeof API_SCOPES)[number] | (typeof MCP_SCOPES)[number];

/** API keys are 32 random bytes: `hk_<base64url>` (MCP keys: `mcp_<base64url>`); stored as sha256. */
export function newApiKey(kind: 'api' | 'mcp' = 'api'): { key: string; prefix: string; hash: string } {
  const key = `${kind === 'mcp' ? 'mcp' : 'hk'}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, kind === 'mcp' ? 12 : 11), hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

const SCRYPT = { N: 16384, r: 8, p: 1 };
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Node's default scrypt `maxmem` (32 MiB): parameters needing more (OpenSSL: 128·r·(N + 2 + p) bytes) make scrypt throw. */
const SCRYPT_MAXMEM = 32 * 1024 * 1024;

/** Passwords use scrypt (a slow hash): `scrypt$N$r$p$salt$hash`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await scrypt(password, salt, HASH_BYTES, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** A decimal integer field within [min, max]; null otherwise ("1e3", "08", "", " 8" included). */
function intField(v: string | undefined, min: number, max: number): number | null {
  if (v === undefined || !/^[1-9]\d{0,9}$/.test(v)) return null;
  const n = Number(v);
  return n >= min && n <= max ? n : null;
}

/** Canonical base64url of exactly `bytes` bytes, decoded; null for anything else. */
function exactBytes(v: string | undefined, bytes: number): Buffer | null {
  if (!v) return null;
  const b = Buffer.from(v, 'base64url');
  return b.length === bytes && b.toString('base64url') === v ? b : null;
}

/**
 * Whether `password` is the one `stored` (hashPassword's format) was made from. A stored
 * value not in that format is no password's: the hash must be the 32 bytes hashPassword
 * writes (as many bytes are derived as it holds, so an empty one matched every password and
 * a 1-byte one one password in 256), the salt its 16 bytes (canonical base64url), N a power
 * of two from 2^10 to 2^20, r from 1 to 32, p from 1 to 16, within scrypt's default memory
 * bound. False for anything else; never throws.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash, ...rest] = stored.split('$');
  if (alg !== 'scrypt' || rest.length > 0) return false;
  const N = intField(n, 1024, 1_048_576);
  const R = intField(r, 1, 32);
  const P = intField(p, 1, 16);
  const saltBytes = exactBytes(salt, SALT_BYTES);
  const expected = exactBytes(hash, HASH_BYTES);
  if (N === null || R === null || P === null || (N & (N - 1)) !== 0 || 128 * R * (N + 2 + P) > SCRYPT_MAXMEM || !saltBytes || !expected) return false;
  const got = await scrypt(password, saltBytes, HASH_BYTES, { N, r: R, p: P }).catch(() => null);
  return got !== null && timingSafeEqual(got, expected);
}
