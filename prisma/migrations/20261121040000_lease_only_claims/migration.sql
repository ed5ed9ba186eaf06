-- Claims write only the lease (hand-written).
--
-- A deliverer's claim, an edge agent's lease and the edge wait sweep used to set status
-- 'delivering' as well as lease_owner/lease_until. status is in an index key and in every
-- partial index's predicate, so each claim wrote a new row version into all the indexes of
-- deliveries. Now a held delivery keeps its claimable status (pending, failed, replaying)
-- and only lease_owner, lease_until and updated_at change: columns no index covers, so
-- PostgreSQL updates the row in place (HOT) when its page has room. The API shows a
-- claimable delivery under a live lease as 'delivering' (the enum value stays for that).

-- Rows held at upgrade keep their lease; only their status goes back to a claimable one.
UPDATE "deliveries"
   SET "status" = CASE WHEN "attempt_count" = 0 THEN 'pending'::"DeliveryStatus" ELSE 'failed'::"DeliveryStatus" END
 WHERE "status" = 'delivering';

-- Indexes no longer needed: expired leases are found among due rows, and nothing has
-- status 'delivering' any more. (An index on lease_until would also stop the HOT updates.)
DROP INDEX IF EXISTS "deliveries_lease_until_delivering_idx";

-- Room on each page for the in-place lease update: rows are inserted together by the
-- router and claimed together soon after, so a full page (the default fillfactor 100)
-- left no room and every claim moved the row. Applies to pages written from now on.
ALTER TABLE "deliveries" SET (fillfactor = 50);
