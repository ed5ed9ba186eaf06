-- Held deliveries: open deliveries of a DISABLED destination (routed to it while it was
-- disabled, retried into it, or left open when it was disabled) are marked held, and the
-- deliverer's recovery sweep index leaves them out, so a sweep no longer walks through
-- every held row (old and due) before it finds work. A trigger on destinations.state
-- (below) keeps the flag on its open deliveries whoever changes the state; the router and
-- retry store it on the deliveries they create or reopen; deleting a destination clears
-- it with the move to the DLQ.

-- A constant default: no table rewrite. IF NOT EXISTS: an operator may have run it by
-- hand first, to build the index below online (see there).
ALTER TABLE "deliveries" ADD COLUMN IF NOT EXISTS "held" BOOLEAN NOT NULL DEFAULT false;

-- The flag follows the destination's state, in the statement that changes it (so in its
-- transaction): disabled, its open deliveries (pending, failed, replaying:
-- CLAIMABLE_STATUSES in @hookline/delivery) are marked held; enabled (any state but
-- DISABLED and DELETED), they are cleared. Deleted, they stay held (out of the sweep's
-- index) until the delete's close (or the deliverer's janitor) moves them to the DLQ
-- with held false: clearing them first would write every row twice. A trigger, not the
-- application, so that manual SQL (UPDATE destinations SET state = …) and an api replica
-- of an older version during a rolling deploy keep it right: a destination set ACTIVE
-- with its deliveries still held would hide them from the recovery sweep for ever.
-- Only open deliveries are touched: a stale flag on a closed one (delivered, exhausted)
-- is harmless (the sweep's index covers claimable statuses only; retry and replay set the
-- flag when they reopen one), and the status filter lets both statements use the open
-- deliveries' index (deliveries_destination_id_next_attempt_at_open_idx) instead of
-- walking every delivery the destination ever had while its row is locked.
-- The rows are locked in id order (ORDER BY id … FOR UPDATE), as every other statement
-- that locks many deliveries does (record_delivery_outcomes' arguments are sorted by id,
-- the delete's close), so that two of them cannot deadlock; a victim is retried anyway.
-- search_path is the migration's: manual SQL from a session with another search_path
-- still finds the tables.
CREATE OR REPLACE FUNCTION "destinations_state_held"() RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $fn$
BEGIN
  IF NEW."state" = 'DISABLED' THEN
    UPDATE "deliveries" d SET "held" = true
      FROM (SELECT o."id" FROM "deliveries" o
             WHERE o."destination_id" = NEW."id" AND o."status" IN ('pending', 'failed', 'replaying') AND NOT o."held"
             ORDER BY o."id" FOR UPDATE) m
     WHERE d."id" = m."id";
  ELSIF OLD."state" = 'DISABLED' AND NEW."state" <> 'DELETED' THEN
    UPDATE "deliveries" d SET "held" = false
      FROM (SELECT o."id" FROM "deliveries" o
             WHERE o."destination_id" = NEW."id" AND o."status" IN ('pending', 'failed', 'replaying') AND o."held"
             ORDER BY o."id" FOR UPDATE) m
     WHERE d."id" = m."id";
  END IF;
  RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS "destinations_state_held" ON "destinations";
CREATE TRIGGER "destinations_state_held"
  AFTER UPDATE OF "state" ON "destinations"
  FOR EACH ROW WHEN (OLD."state" IS DISTINCT FROM NEW."state")
  EXECUTE FUNCTION "destinations_state_held"();

-- Rows already held when this runs: open deliveries of DISABLED destinations.
UPDATE "deliveries" d SET "held" = true
  FROM "destinations" t
 WHERE t."id" = d."destination_id" AND t."state" = 'DISABLED'
   AND d."status" IN ('pending', 'failed', 'replaying') AND NOT d."held";

-- The recovery sweep's index, without the held rows: built under a temporary name, then
-- swapped in, all in this migration's transaction (writes to deliveries wait meanwhile).
-- Operators with a big deliveries table can build it online first, outside a
-- transaction, before deploying (this migration then only swaps it in):
--   ALTER TABLE "deliveries" ADD COLUMN IF NOT EXISTS "held" BOOLEAN NOT NULL DEFAULT false;
--   CREATE INDEX CONCURRENTLY "deliveries_next_attempt_at_due_idx_new" ON "deliveries"("next_attempt_at")
--     WHERE "status" IN ('pending', 'failed', 'replaying') AND NOT "held";
-- (the ADD COLUMN is instant; this migration's ADD COLUMN IF NOT EXISTS then skips it).
CREATE INDEX IF NOT EXISTS "deliveries_next_attempt_at_due_idx_new" ON "deliveries"("next_attempt_at")
  WHERE "status" IN ('pending', 'failed', 'replaying') AND NOT "held";
DROP INDEX IF EXISTS "deliveries_next_attempt_at_due_idx";
ALTER INDEX "deliveries_next_attempt_at_due_idx_new" RENAME TO "deliveries_next_attempt_at_due_idx";
