import { API_SCOPES, type Scope } from './credentials';

/**
 * A user's role (users.role) decides the scopes of their session tokens, as in Svix's and
 * Hookdeck's dashboards:
 * - `owner` and `admin`: every API scope;
 * - `member`: every scope but those that mint credentials (`write:api-keys`, and
 *   `write:clusters`, which issues cluster keys);
 * - `viewer`: the `read:*` scopes only.
 * A role not listed here (a row written by hand) gets no scope at all: fail closed.
 */
export const USER_ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

const MINTING: readonly Scope[] = ['write:api-keys', 'write:clusters'];

const SCOPES_OF: Record<UserRole, readonly Scope[]> = {
  owner: API_SCOPES,
  admin: API_SCOPES,
  member: API_SCOPES.filter((s) => !MINTING.includes(s)),
  viewer: API_SCOPES.filter((s) => s.startsWith('read:')),
};

export function isUserRole(role: string): role is UserRole {
  return (USER_ROLES as readonly string[]).includes(role);
}

/** The scopes a session of a user with this role carries (a new set each call). */
export function scopesOfRole(role: string): Set<Scope> {
  return new Set(isUserRole(role) ? SCOPES_OF[role] : []);
}
