-- Login compares the email exactly, ignoring case only (services/api/src/auth/login.routes.ts:
-- `lower(email) = $1`; a case-insensitive match in Prisma is ILIKE, where `_` and `%` are
-- wildcards). The unique index on users.email is on the email as stored, so without this one
-- every login reads the whole users table. Not unique: rows that differ only in case may
-- exist (inserted by hand); login treats them as ambiguous, and `pnpm admin create-tenant`
-- refuses a new one. Small table: a plain CREATE INDEX in this migration's transaction.
CREATE INDEX IF NOT EXISTS "users_lower_email_idx" ON "users" (lower("email"));
