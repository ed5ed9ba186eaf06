import jwt from 'jsonwebtoken';
import { scopesOfRole } from '@hookline/signing';
import type { AppContext, Principal } from '../context';
import type { PlanName } from '../config';
import { unauthorized } from './api-key.auth';

// Pinned: a token signed with anything else (including `none`) is refused.
const ALGORITHM = 'HS256' as const;

// Clock difference between api replicas (one issues a token, another verifies it).
const CLOCK_SKEW_SECONDS = 60;

export interface SessionClaims {
  sub: string;
  tid: string;
  typ: 'session';
  /**
   * Issue time in milliseconds on PostgreSQL's clock (login.routes.ts), compared with the
   * user's sessions_valid_after (POST /auth/logout). `iat` stays the issuing replica's
   * clock in whole seconds, for exp and the age checks. Absent from tokens issued before it
   * existed.
   */
  iat_ms?: number;
}

/** JWT_EXPIRES_IN as jsonwebtoken reads it: digits are seconds, else a timespan ("15m", "1h"). */
function sessionLifetime(expiresIn: string): number | string {
  return /^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn;
}

export function issueSessionToken(secret: string, expiresIn: string, userId: string, tenantId: string, issuedAtMs: number): { token: string; expiresAt: Date } {
  const claims: SessionClaims = { sub: userId, tid: tenantId, typ: 'session', iat_ms: issuedAtMs };
  // jwt.sign also writes `iat`, which authenticateSession requires.
  const token = jwt.sign(claims, secret, { algorithm: ALGORITHM, expiresIn: sessionLifetime(expiresIn) as jwt.SignOptions['expiresIn'] });
  const { exp } = jwt.decode(token) as { exp: number };
  return { token, expiresAt: new Date(exp * 1000) };
}

/**
 * Whether the token predates the user's last logout ("log out everywhere"): issued at or
 * before sessions_valid_after. By `iat_ms` when the token has it; an older token only says
 * its whole second (`iat`), and one of the logout's own second may have been issued before
 * it: refused too.
 */
function loggedOut(claims: Pick<SessionClaims, 'iat_ms'> & { iat: number }, sessionsValidAfter: Date | null): boolean {
  if (!sessionsValidAfter) return false;
  return (claims.iat_ms ?? claims.iat * 1000) <= sessionsValidAfter.getTime();
}

export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);
}

/**
 * Verifies a session JWT and loads its user, whose role (read now, not at login: a changed
 * role applies to tokens already issued) decides the scopes (`scopesOfRole`).
 * A token must be one login could have issued: it carries `exp` (jsonwebtoken accepts a token
 * without one for ever) and `iat`, is not older than the session lifetime (JWT_EXPIRES_IN)
 * whatever its `exp` says, and was not issued in the future; nor issued at or before the
 * user's last logout (`sessions_valid_after`, read in the same lookup as the user).
 */
export async function authenticateSession(app: AppContext, token: string): Promise<Principal> {
  let claims: SessionClaims & { iat: number };
  try {
    const decoded = jwt.verify(token, app.config.JWT_SECRET, { algorithms: [ALGORITHM], maxAge: sessionLifetime(app.config.JWT_EXPIRES_IN) });
    if (typeof decoded !== 'object' || decoded['typ'] !== 'session' || typeof decoded.sub !== 'string' || typeof decoded['tid'] !== 'string') throw new Error('bad claims');
    if (typeof decoded.exp !== 'number' || typeof decoded.iat !== 'number') throw new Error('no exp or iat');
    if (decoded.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) throw new Error('issued in the future');
    if (decoded['iat_ms'] !== undefined && !Number.isSafeInteger(decoded['iat_ms'])) throw new Error('bad iat_ms');
    claims = decoded as SessionClaims & { iat: number };
  } catch {
    throw unauthorized('The session token is invalid or expired.');
  }
  const user = await app.prisma.user.findUnique({ where: { id: claims.sub }, select: { id: true, tenantId: true, role: true, sessionsValidAfter: true, tenant: { select: { plan: true } } } });
  if (!user || user.tenantId !== claims.tid || loggedOut(claims, user.sessionsValidAfter)) throw unauthorized('The session token is invalid or expired.');
  return { kind: 'user', id: user.id, tenantId: user.tenantId, plan: user.tenant.plan as PlanName, scopes: scopesOfRole(user.role) };
}
