-- Held deliveries expire: the deliverer's janitor moves open deliveries held (of a
-- DISABLED destination, `held`, migration 20261124000000_held_deliveries) for longer than
-- HELD_RETENTION_MS to the DLQ, oldest first, a bounded batch per run
-- (services/deliverer/src/expire-held.ts). The retention counts from when the delivery was
-- held, not from created_at: a delivery created long ago (a long retry schedule, a replay,
-- one retried from the DLQ) held by a destination disabled a minute ago, or retried into
-- it, must not go to the DLQ at the janitor's next run.
--
-- held_since: when `held` last became true; NULL while it is not held (a stale value on a
-- delivery that is no longer held is never read: only held rows are expired). Set, in the
-- statement that sets `held`, by the trigger on destinations.state below (disable), the
-- router (deliveries routed to a DISABLED destination, services/router/src/route-events.ts
-- ROUTE_HELD) and retry (reopened into a DISABLED destination, RETRY_SQL in
-- services/api/src/replay/replay.service.ts); cleared by the trigger (enable) and by a
-- close (closeSql in @hookline/delivery: a delete's, the janitor's). A router or api replica
-- of an older version during a rolling deploy stores held rows without it: the janitor
-- stamps those (held AND held_since IS NULL) with its own time before it expires anything,
-- through the index below, so they are neither stranded nor expired at once.
--
-- Nullable, no default: only the catalog changes (no table rewrite). IF NOT EXISTS: an
-- operator may have added it by hand first, to build the index below online (see there).
ALTER TABLE "deliveries" ADD COLUMN IF NOT EXISTS "held_since" TIMESTAMPTZ(3);

-- The trigger function of migration 20261124000000_held_deliveries, with the same
-- behaviour (see there: which rows, lock order, search_path), now also stamping held_since
-- when it marks the open deliveries held (disable) and clearing it when it clears them
-- (enable). The trigger itself is unchanged (it calls the function by name).
CREATE OR REPLACE FUNCTION "destinations_state_held"() RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $fn$
BEGIN
  IF NEW."state" = 'DISABLED' THEN
    UPDATE "deliveries" d SET "held" = true, "held_since" = now()
      FROM (SELECT o."id" FROM "deliveries" o
             WHERE o."destination_id" = NEW."id" AND o."status" IN ('pending', 'failed', 'replaying') AND NOT o."held"
             ORDER BY o."id" FOR UPDATE) m
     WHERE d."id" = m."id";
  ELSIF OLD."state" = 'DISABLED' AND NEW."state" <> 'DELETED' THEN
    UPDATE "deliveries" d SET "held" = false, "held_since" = NULL
      FROM (SELECT o."id" FROM "deliveries" o
             WHERE o."destination_id" = NEW."id" AND o."status" IN ('pending', 'failed', 'replaying') AND o."held"
             ORDER BY o."id" FOR UPDATE) m
     WHERE d."id" = m."id";
  END IF;
  RETURN NULL;
END
$fn$;

-- Rows already held when this runs (open and held; this migration's transaction holds the
-- deliveries table locked since the ALTER TABLE above, so none is held meanwhile): when
-- they were held is recorded nowhere, so they get now(): their retention counts from this
-- deploy (they go to the DLQ HELD_RETENTION_MS after it at the earliest), never from their
-- created_at.
UPDATE "deliveries" SET "held_since" = now()
 WHERE "held" AND "held_since" IS NULL AND "status" IN ('pending', 'failed', 'replaying');

-- The janitor's index: only the held open rows, in held_since order. A run reads the
-- expired ones from its start and stops at the first one not yet expired, so it costs
-- nothing when many rows are held and none expired, however long the delivery history is
-- (without it, every run would read the whole table or the whole held backlog); the
-- stamping of rows without held_since reads its NULL end (NULLS LAST).
--
-- It adds no cost to the hot path: claims write the lease columns only (held_since is in
-- no other index, and `held` and `status` are already in other indexes' predicates), so
-- they stay in-place (HOT) updates; held_since is written only with `held` or `status`,
-- which already make that update a non-HOT one, and only held rows are entered in it.
--
-- Partial indexes exist only in SQL: schema.prisma names it in a comment. This migration
-- runs in one transaction, so it is a plain CREATE INDEX (writes to deliveries wait while
-- it builds). Operators with a big deliveries table can build it online first, outside a
-- transaction, under the same name (IF NOT EXISTS then skips it here):
--   ALTER TABLE "deliveries" ADD COLUMN IF NOT EXISTS "held_since" TIMESTAMPTZ(3);
--   CREATE INDEX CONCURRENTLY "deliveries_held_since_held_idx" ON "deliveries"("held_since")
--     WHERE "held" AND "status" IN ('pending', 'failed', 'replaying');
-- (the ADD COLUMN is instant; this migration's ADD COLUMN IF NOT EXISTS then skips it).
CREATE INDEX IF NOT EXISTS "deliveries_held_since_held_idx" ON "deliveries"("held_since")
  WHERE "held" AND "status" IN ('pending', 'failed', 'replaying');

-- A pre-release version of this migration (20261125000000_held_expiry_index) indexed
-- created_at instead: a development database that applied it keeps no unused index.
DROP INDEX IF EXISTS "deliveries_created_at_held_idx";
