// Where the ingest->delivered time goes, from the timestamps Hookline keeps in PostgreSQL,
// for the events received in a window: p50/p90/p99 (ms) of each stage.
import type { Pool } from '@hookline/db';

export type StageBreakdown = Record<string, { p50: number; p90: number; p99: number }>;

const STAGES = `
  WITH e AS (SELECT id, received_at, validated_at, filtered_at FROM events WHERE received_at >= $1 AND received_at < $2),
  d AS (
    SELECT e.received_at, e.validated_at, e.filtered_at, d.created_at, d.delivered_at, a.started_at, a.duration_ms
    FROM e JOIN deliveries d ON d.event_id = e.id
    LEFT JOIN delivery_attempts a ON a.delivery_id = d.id AND a.number = 1
  )
  SELECT
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM validated_at - received_at) * 1000) AS "received→stored (ingest)",
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM filtered_at - validated_at) * 1000) AS "stored→routed (route queue + router)",
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at) * 1000) AS "routed→first attempt (deliver queue + claim)",
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY duration_ms) AS "first attempt HTTP",
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - started_at) * 1000) AS "attempt start→recorded delivered",
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - received_at) * 1000) AS "received→recorded delivered"
  FROM d`;

export async function stageBreakdown(pool: Pool, from: number, to: number): Promise<StageBreakdown> {
  const r = await pool.query<Record<string, number[] | null>>(STAGES, [new Date(from), new Date(to)]);
  const out: StageBreakdown = {};
  for (const [k, v] of Object.entries(r.rows[0] ?? {})) {
    if (!v) continue;
    const [p50 = 0, p90 = 0, p99 = 0] = v.map((x) => Math.round(Number(x)));
    out[k] = { p50, p90, p99 };
  }
  return out;
}

/** One second of a latency phase: events received in it and their received→delivered times (ms). */
export interface SecondOfLatency {
  /** Seconds since the start of the window. */
  s: number;
  deliveries: number;
  p50: number;
  p99: number;
  max: number;
}

const BY_SECOND = `
  SELECT floor(extract(epoch FROM e.received_at - $1::timestamptz))::int AS s, count(*)::int AS deliveries,
    percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM d.delivered_at - e.received_at) * 1000) AS p,
    max(extract(epoch FROM d.delivered_at - e.received_at) * 1000) AS max
  FROM events e JOIN deliveries d ON d.event_id = e.id
  WHERE e.received_at >= $1 AND e.received_at < $2 AND d.delivered_at IS NOT NULL
  GROUP BY 1 ORDER BY 1`;

/**
 * Received→delivered by the second the event was received in: shows whether a phase's tail
 * is spread evenly or comes from a few stalled seconds (a checkpoint, a sealing pass, autovacuum).
 */
export async function latencyBySecond(pool: Pool, from: number, to: number): Promise<SecondOfLatency[]> {
  const r = await pool.query<{ s: number; deliveries: number; p: number[]; max: number }>(BY_SECOND, [new Date(from), new Date(to)]);
  return r.rows.map((x) => ({ s: x.s, deliveries: x.deliveries, p50: Math.round(Number(x.p[0])), p99: Math.round(Number(x.p[1])), max: Math.round(Number(x.max)) }));
}
