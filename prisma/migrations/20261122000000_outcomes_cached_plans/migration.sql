-- record_delivery_outcomes keeps its plans (hand-written).
--
-- The function planned its three statements on every call (plan_cache_mode =
-- force_custom_plan): PL/pgSQL's cached generic plans, made from the statistics of tables
-- that start empty, had chosen sequential scans and hash joins that grew with the tables
-- (8.0-15.8 ms calls instead of 5.7-7.4 in the benchmark). Planning was then about a fifth
-- of each call (0.8 ms of ~4 ms for a batch of 17 outcomes, pg_stat_statements with
-- track_planning).
--
-- Now the function runs with index plans only, the settings the pipeline's connections
-- use (INDEX_PLAN_SETTINGS in @hookline/db): every plan of its statements is primary-key
-- and (event_id, flow_id) lookups in nested loops, right for a batch of ids whatever the
-- tables' size, so PostgreSQL may keep the plan it makes (plan_cache_mode back to auto).
-- test/db-cached-plans.test.ts checks the plans of the function's statements.
ALTER FUNCTION "record_delivery_outcomes"(TEXT[], TEXT[], TEXT[], INTEGER[], INTEGER[], TEXT[], TEXT[], TEXT[], TEXT[], TIMESTAMPTZ[], INTEGER[], TEXT[], INTEGER[], TEXT[], TEXT, TEXT[])
  RESET plan_cache_mode;
ALTER FUNCTION "record_delivery_outcomes"(TEXT[], TEXT[], TEXT[], INTEGER[], INTEGER[], TEXT[], TEXT[], TEXT[], TEXT[], TIMESTAMPTZ[], INTEGER[], TEXT[], INTEGER[], TEXT[], TEXT, TEXT[])
  SET enable_seqscan = off;
ALTER FUNCTION "record_delivery_outcomes"(TEXT[], TEXT[], TEXT[], INTEGER[], INTEGER[], TEXT[], TEXT[], TEXT[], TEXT[], TIMESTAMPTZ[], INTEGER[], TEXT[], INTEGER[], TEXT[], TEXT, TEXT[])
  SET enable_hashjoin = off;
ALTER FUNCTION "record_delivery_outcomes"(TEXT[], TEXT[], TEXT[], INTEGER[], INTEGER[], TEXT[], TEXT[], TEXT[], TEXT[], TIMESTAMPTZ[], INTEGER[], TEXT[], INTEGER[], TEXT[], TEXT, TEXT[])
  SET enable_mergejoin = off;
