-- "Log out everywhere" (POST /auth/logout, services/api/src/auth/logout.routes.ts): a session
-- token of this user issued at or before this moment is refused (authenticateSession,
-- services/api/src/auth/session-jwt.ts). NULL: never logged out, every unexpired token is
-- good. Set from PostgreSQL's clock, the one clock every api replica shares.
-- Nullable with no default: a catalog-only change, no table rewrite.
ALTER TABLE "users" ADD COLUMN IF NOT EXISTS "sessions_valid_after" TIMESTAMPTZ(3);
