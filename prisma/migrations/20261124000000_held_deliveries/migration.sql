-- Held deliveries: open deliveries of a DISABLED destination (routed to it while it was
-- disabled, retried into it, or left open when it was disabled) are marked held, and the
-- deliverer's recovery sweep index leaves them out, so a sweep no longer walks through
-- every held row (old and due) before it finds work. Enabling the destination clears the
-- flag in the enable's transaction; deleting it clears it with the move to the DLQ.

-- A constant default: no table rewrite.
ALTER TABLE "deliveries" ADD COLUMN "held" BOOLEAN NOT NULL DEFAULT false;

-- Rows already held when this runs: open deliveries of DISABLED destinations.
UPDATE "deliveries" d SET "held" = true
  FROM "destinations" t
 WHERE t."id" = d."destination_id" AND t."state" = 'DISABLED'
   AND d."status" IN ('pending', 'failed', 'replaying');

-- The recovery sweep's index, without the held rows: built under a temporary name, then
-- swapped in, all in this migration's transaction (writes to deliveries wait meanwhile).
-- Operators with a big deliveries table can build it online first, outside a
-- transaction, before deploying (this migration then only swaps it in):
--   CREATE INDEX CONCURRENTLY "deliveries_next_attempt_at_due_idx_new" ON "deliveries"("next_attempt_at")
--     WHERE "status" IN ('pending', 'failed', 'replaying') AND NOT "held";
-- (the ADD COLUMN above must have run first: apply it by hand too, it is instant).
CREATE INDEX IF NOT EXISTS "deliveries_next_attempt_at_due_idx_new" ON "deliveries"("next_attempt_at")
  WHERE "status" IN ('pending', 'failed', 'replaying') AND NOT "held";
DROP INDEX IF EXISTS "deliveries_next_attempt_at_due_idx";
ALTER INDEX "deliveries_next_attempt_at_due_idx_new" RENAME TO "deliveries_next_attempt_at_due_idx";
