-- A rate limit of its own for each MCP key (SG-006): the bucket of a key created with
-- `rate_limit` uses these figures; both null (every existing key) means MCP_KEY_RATE_LIMIT.

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "rate_limit_burst" INTEGER,
ADD COLUMN     "rate_limit_per_minute" INTEGER;

-- Hand-written (Prisma's schema language does not declare CHECK constraints): both figures
-- or neither, and each at least 1. Existing rows have neither, so this validates at once.
-- (The IS NOT NULL tests matter: with one figure null, `x >= 1 AND NULL >= 1` is NULL, and
-- a CHECK lets a NULL through.)
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_rate_limit_check" CHECK (
  ("rate_limit_per_minute" IS NULL AND "rate_limit_burst" IS NULL)
  OR ("rate_limit_per_minute" IS NOT NULL AND "rate_limit_burst" IS NOT NULL
      AND "rate_limit_per_minute" >= 1 AND "rate_limit_burst" >= 1)
);
