-- An attempt is recorded once, however often its write is retried (hand-written).
--
-- The deliverer retries an outcome write that failed because the connection to PostgreSQL
-- was lost (recordSent in services/deliverer/src/settle-deliveries.ts, retryTransient in
-- @hookline/db). A connection lost after the COMMIT reached the server but before its
-- reply came back looks the same as one lost before: the call had committed, and its retry
-- inserted the attempts a second time (new ids each call), two rows of the same number for
-- one request, and two evidence receipts for it. The deliveries' UPDATE was already
-- harmless to repeat (the lease the first call dropped no longer matches), as is the
-- events' roll-up (it reads the deliveries as they are).
--
-- Now the attempt's id is made once per outcome, before the first try, and every retry of
-- the write passes the same ids (recordSent; Outcome.attemptId in @hookline/delivery); the
-- INSERT skips an id that is there already (ON CONFLICT (id) DO NOTHING, the primary key). A retry
-- that overlaps a first call still running on the server waits for it on the key, then
-- inserts nothing if it committed, or the attempt if it rolled back. Callers that do not
-- pass an id of their own get a new one per call, as before.
--
-- The same function otherwise, statement for statement (migration
-- 20261129000000_delivered_events_stay); CREATE OR REPLACE replaces the function's
-- settings too, so the index-plan settings of migration 20261122000000_outcomes_cached_plans
-- are given again here (test/db-cached-plans.test.ts checks the plans of its statements).
CREATE OR REPLACE FUNCTION "record_delivery_outcomes"(
  p_attempt_ids TEXT[], p_tenant_ids TEXT[], p_delivery_ids TEXT[], p_numbers INTEGER[],
  p_status_codes INTEGER[], p_bodies TEXT[], p_headers TEXT[], p_error_kinds TEXT[], p_errors TEXT[],
  p_started_at TIMESTAMPTZ[], p_durations INTEGER[], p_statuses TEXT[], p_delays INTEGER[],
  p_owners TEXT[], p_via TEXT, p_event_ids TEXT[]
) RETURNS VOID
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
BEGIN
  WITH att AS (
    INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, response_headers, error_kind, error, started_at, duration_ms, via)
    SELECT a.id, a.tenant_id, a.delivery_id, a.number, a.status_code, a.body, a.headers::jsonb, a.kind, a.error, a.started_at, a.duration, p_via
    FROM unnest(p_attempt_ids, p_tenant_ids, p_delivery_ids, p_numbers, p_status_codes, p_bodies, p_headers, p_error_kinds, p_errors, p_started_at, p_durations)
      AS a(id, tenant_id, delivery_id, number, status_code, body, headers, kind, error, started_at, duration)
    ON CONFLICT (id) DO NOTHING
  )
  UPDATE deliveries d SET
    status = u.status::"DeliveryStatus",
    attempt_count = GREATEST(d.attempt_count, u.number),
    next_attempt_at = CASE WHEN u.status = 'failed' THEN now() + u.delay::float8 * interval '1 millisecond' ELSE d.next_attempt_at END,
    lease_until = NULL, lease_owner = NULL,
    last_error = u.error, last_status_code = u.status_code,
    delivered_at = CASE WHEN u.status = 'delivered' THEN now() ELSE d.delivered_at END,
    exhausted_at = CASE WHEN u.status = 'exhausted' THEN now() ELSE d.exhausted_at END,
    updated_at = now()
  FROM unnest(p_delivery_ids, p_numbers, p_statuses, p_delays, p_errors, p_status_codes, p_owners) AS u(id, number, status, delay, error, status_code, owner)
  WHERE d.id = u.id AND d.lease_owner = u.owner AND d.status IN ('pending', 'failed', 'replaying');

  PERFORM 1 FROM events WHERE id = ANY(p_event_ids) ORDER BY id FOR UPDATE;

  WITH next AS (
    SELECT x.event_id, a.any_replayed,
      (CASE WHEN a.any_exhausted THEN 'dlq_queued' WHEN a.any_failed THEN 'failed' WHEN a.all_delivered THEN 'delivered' END)::"EventStatus" AS status
    FROM unnest(p_event_ids) AS x(event_id)
    CROSS JOIN LATERAL (
      SELECT bool_or(d.status = 'exhausted') AS any_exhausted,
        bool_or(d.status = 'failed') AS any_failed,
        bool_and(d.status = 'delivered') AS all_delivered,
        bool_or(d.replay_count > 0) AS any_replayed
      FROM deliveries d WHERE d.event_id = x.event_id
    ) a
  )
  UPDATE events e SET
    status = n.status,
    status_reason = CASE WHEN n.status = 'delivered' AND n.any_replayed THEN 'replayed' ELSE e.status_reason END,
    delivered_at = CASE WHEN n.status = 'delivered' THEN now() ELSE e.delivered_at END,
    failed_at = CASE WHEN n.status IN ('failed', 'dlq_queued') AND e.status NOT IN ('failed', 'dlq_queued') THEN now() ELSE e.failed_at END,
    updated_at = now()
  FROM next n
  WHERE e.id = n.event_id AND n.status IS NOT NULL AND e.status IS DISTINCT FROM n.status
    AND e.status NOT IN ('delivered', 'acked')
    AND NOT (e.status = 'replayed' AND n.status = 'failed');
END
$fn$;
