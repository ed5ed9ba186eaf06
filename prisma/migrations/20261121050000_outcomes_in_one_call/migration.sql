-- A batch of delivery outcomes is recorded in one call (hand-written).
--
-- The deliverer recorded a batch as a transaction of five statements (BEGIN, the attempts
-- and the deliveries' outcomes, the lock on their events, the events' status, COMMIT):
-- five round trips, each a wake-up of PostgreSQL and of the deliverer on a machine whose
-- cores are shared, with the deliveries' rows locked throughout. This function runs the
-- same three statements in one call: one round trip, atomic without BEGIN/COMMIT when
-- called on its own. It is VOLATILE, so under READ COMMITTED each statement takes a new
-- snapshot: the events' status is read after their lock is held, and so after any
-- concurrent batch of the same event has committed (the last writer sees all), as before.
--
-- The lease guard (the owner, and a status a lease can hold: pending, failed, replaying,
-- CLAIMABLE_STATUSES in @hookline/delivery) keeps a claim that expired (and was taken
-- over, or replayed) from overwriting the newer state; its attempt is still recorded.
--
-- Event status from all of its deliveries: any exhausted -> dlq_queued, else any failed ->
-- failed, else all delivered -> delivered (status_reason 'replayed' when one was
-- replayed). Events that still have deliveries in flight keep their status. Aggregated
-- per event id (LATERAL, by the (event_id, flow_id) index) so that stale statistics
-- cannot turn it into a scan of the whole deliveries table.
--
-- plan_cache_mode = force_custom_plan: each call is planned for its own arrays, as the
-- statements were when sent one by one. PL/pgSQL would otherwise keep a generic plan
-- after five calls, made from the statistics of that moment: on a 100,000-row table that
-- was faster (10-row calls 2.6-3.2 ms instead of 3.6-3.9), but in the benchmark, whose
-- tables start empty, the call took 8.0-15.8 ms instead of 5.7-7.4.
CREATE OR REPLACE FUNCTION "record_delivery_outcomes"(
  p_attempt_ids TEXT[], p_tenant_ids TEXT[], p_delivery_ids TEXT[], p_numbers INTEGER[],
  p_status_codes INTEGER[], p_bodies TEXT[], p_headers TEXT[], p_error_kinds TEXT[], p_errors TEXT[],
  p_started_at TIMESTAMPTZ[], p_durations INTEGER[], p_statuses TEXT[], p_delays INTEGER[],
  p_owners TEXT[], p_via TEXT, p_event_ids TEXT[]
) RETURNS VOID
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan
AS $fn$
BEGIN
  WITH att AS (
    INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, response_headers, error_kind, error, started_at, duration_ms, via)
    SELECT a.id, a.tenant_id, a.delivery_id, a.number, a.status_code, a.body, a.headers::jsonb, a.kind, a.error, a.started_at, a.duration, p_via
    FROM unnest(p_attempt_ids, p_tenant_ids, p_delivery_ids, p_numbers, p_status_codes, p_bodies, p_headers, p_error_kinds, p_errors, p_started_at, p_durations)
      AS a(id, tenant_id, delivery_id, number, status_code, body, headers, kind, error, started_at, duration)
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
  WHERE e.id = n.event_id AND n.status IS NOT NULL AND e.status IS DISTINCT FROM n.status;
END
$fn$;
