-- Hot-path indexes (hand-written). The partial indexes cover only the rows the sweeps,
-- claims and edge leases look for (due, in-flight, in the DLQ, not yet routed), so they
-- stay small however long the delivery history grows, unlike the plain
-- (status, next_attempt_at) and (status, received_at) indexes they replace.
--
-- Partial indexes exist only here: schema.prisma names them in comments (Prisma's schema
-- language does not declare them without a preview feature).
--
-- Each migration runs in one transaction, so these are plain CREATE INDEX (writes to the
-- table wait while it builds). On a large existing install, create them first with
-- CREATE INDEX CONCURRENTLY under the same names: IF NOT EXISTS then skips them here.

-- Edge agents' work leases, the cluster views' in_flight and the edge wait sweep: a
-- cluster's destinations, then their open deliveries in due order.
CREATE INDEX IF NOT EXISTS "destinations_cluster_id_idx" ON "destinations"("cluster_id");

CREATE INDEX IF NOT EXISTS "deliveries_destination_id_next_attempt_at_open_idx" ON "deliveries"("destination_id", "next_attempt_at")
  WHERE "status" IN ('pending', 'failed', 'replaying', 'delivering');

-- The deliverer's recovery sweep: due deliveries whose job was lost, oldest first ...
CREATE INDEX IF NOT EXISTS "deliveries_next_attempt_at_due_idx" ON "deliveries"("next_attempt_at")
  WHERE "status" IN ('pending', 'failed', 'replaying');

-- ... and deliveries whose lease expired (also the drain's release of held leases).
CREATE INDEX IF NOT EXISTS "deliveries_lease_until_delivering_idx" ON "deliveries"("lease_until")
  WHERE "status" = 'delivering';

-- The DLQ purge: exhausted deliveries past retention, oldest first.
CREATE INDEX IF NOT EXISTS "deliveries_exhausted_at_dlq_idx" ON "deliveries"("exhausted_at")
  WHERE "status" = 'exhausted';

-- The router's recovery sweep: events still `validated` (not routed), oldest first.
CREATE INDEX IF NOT EXISTS "events_received_at_validated_idx" ON "events"("received_at")
  WHERE "status" = 'validated';

-- Replaced by the partial indexes above (nothing else filters on status alone).
DROP INDEX IF EXISTS "deliveries_status_next_attempt_at_idx";
DROP INDEX IF EXISTS "events_status_received_at_idx";
