-- A cluster key can be rotated (POST /v1/tenants/{tid}/clusters/{id}/rotate-key,
-- services/api/src/clusters/cluster.routes.ts): the new key becomes key_encrypted and the
-- one it replaces stays valid until previous_key_expires_at (the request's grace_seconds),
-- so that the edge agents can be redeployed with the new key; grace_seconds 0 revokes it at
-- once (both columns NULL). One previous key at most: rotating again within the grace
-- period ends the older key at once. The edge agent endpoints (services/api/src/edge/
-- edge-auth.ts) accept the previous key only while previous_key_expires_at > now()
-- (the database's clock). key_rotated_at: when the current key was issued by a rotation
-- (NULL: the enrollment key).
--
-- Nullable, no default: only the catalog changes (no table rewrite, no row written); every
-- existing cluster has no previous key. IF NOT EXISTS: an operator may have added them by
-- hand first.
ALTER TABLE "clusters" ADD COLUMN IF NOT EXISTS "previous_key_encrypted" TEXT;
ALTER TABLE "clusters" ADD COLUMN IF NOT EXISTS "previous_key_expires_at" TIMESTAMPTZ(3);
ALTER TABLE "clusters" ADD COLUMN IF NOT EXISTS "key_rotated_at" TIMESTAMPTZ(3);
