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

/** Passwords use scrypt (a slow hash): `scrypt$N$r$p$salt$hash`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const got = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(got, expected);
}
