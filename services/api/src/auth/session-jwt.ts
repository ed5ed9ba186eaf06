import jwt from 'jsonwebtoken';
import { API_SCOPES } from '@hookline/signing';
import type { AppContext, Principal } from '../context';
import type { PlanName } from '../config';
import { unauthorized } from './api-key.auth';

// Pinned: a token signed with anything else (including `none`) is refused.
const ALGORITHM = 'HS256' as const;

export interface SessionClaims {
  sub: string;
  tid: string;
  typ: 'session';
}

export function issueSessionToken(secret: string, expiresIn: string, userId: string, tenantId: string): { token: string; expiresAt: Date } {
  const claims: SessionClaims = { sub: userId, tid: tenantId, typ: 'session' };
  const ttl = /^\d+$/.test(expiresIn) ? Number(expiresIn) : (expiresIn as jwt.SignOptions['expiresIn']);
  const token = jwt.sign(claims, secret, { algorithm: ALGORITHM, expiresIn: ttl });
  const { exp } = jwt.decode(token) as { exp: number };
  return { token, expiresAt: new Date(exp * 1000) };
}

export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);
}

/** Verifies a session JWT and loads its user; the user carries every API scope of its tenant. */
export async function authenticateSession(app: AppContext, token: string): Promise<Principal> {
  let claims: SessionClaims;
  try {
    const decoded = jwt.verify(token, app.config.JWT_SECRET, { algorithms: [ALGORITHM] });
    if (typeof decoded !== 'object' || decoded['typ'] !== 'session' || typeof decoded.sub !== 'string' || typeof decoded['tid'] !== 'string') throw new Error('bad claims');
    claims = decoded as SessionClaims;
  } catch {
    throw unauthorized('The session token is invalid or expired.');
  }
  const user = await app.prisma.user.findUnique({ where: { id: claims.sub }, select: { id: true, tenantId: true, tenant: { select: { plan: true } } } });
  if (!user || user.tenantId !== claims.tid) throw unauthorized('The session token is invalid or expired.');
  return { kind: 'user', id: user.id, tenantId: user.tenantId, plan: user.tenant.plan as PlanName, scopes: new Set(API_SCOPES) };
}
