import type { IncomingHttpHeaders } from 'node:http';
import type { AppContext, Principal } from '../context';
import { authenticateApiKey, unauthorized } from './api-key.auth';
import { authenticateSession, looksLikeJwt } from './session-jwt';

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * `X-API-Key: hk_…`, or `Authorization: Bearer <hk_… | session JWT>`. A Bearer value that
 * is not an API key is tried as a session JWT.
 */
export async function authenticate(app: AppContext, headers: IncomingHttpHeaders): Promise<Principal> {
  const apiKey = header(headers, 'x-api-key')?.trim();
  if (apiKey) return authenticateApiKey(app, apiKey);
  const authz = header(headers, 'authorization');
  const m = authz ? /^Bearer\s+(\S+)\s*$/i.exec(authz) : null;
  const token = m?.[1];
  if (!token) throw unauthorized('An API key (X-API-Key or Authorization: Bearer) or a session token is required.');
  if (!token.startsWith('hk_') && looksLikeJwt(token)) return authenticateSession(app, token);
  return authenticateApiKey(app, token);
}
