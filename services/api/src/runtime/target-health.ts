import { readDestinationHealthState } from '@hookline/queues';
import type { AppContext } from '../context';
import { idAtOrAfter } from '../http/id-window';
import { iso } from '../lib/format';
import { findDestination } from '../destinations/destination.service';

interface Stats {
  total: string;
  succeeded: string;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  avg: number | null;
  consecutive_failures: string;
  last_status_code: number | null;
  last_error: string | null;
  last_error_at: Date | null;
  last_success_at: Date | null;
}

// The last 24 h, at most 1,000 attempts: enough for percentiles, bounded in cost. started_at
// has no index: the id lower bound $3 (the window and an hour more, id-window.ts) lets
// delivery_attempts_tenant_id_id_idx read the tenant's attempts of about a day, not all of
// them; the exact time test stays. (An attempt's delivery may be older than the window, so
// the deliveries cannot be bounded the same way.)
const STATS_SQL = `
WITH recent AS (
  SELECT a.status_code, a.error_kind, a.error, a.duration_ms, a.started_at
    FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
   WHERE d.destination_id = $1 AND a.tenant_id = $2 AND a.id >= $3 AND a.started_at > now() - interval '24 hours'
   ORDER BY a.started_at DESC LIMIT 1000
), last_ok AS (SELECT max(started_at) AS at FROM recent WHERE status_code BETWEEN 200 AND 299),
   last_bad AS (SELECT * FROM recent WHERE status_code IS NULL OR status_code NOT BETWEEN 200 AND 299 ORDER BY started_at DESC LIMIT 1)
SELECT count(*) AS total,
       count(*) FILTER (WHERE status_code BETWEEN 200 AND 299) AS succeeded,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99,
       avg(duration_ms)::float8 AS avg,
       count(*) FILTER (WHERE started_at > coalesce((SELECT at FROM last_ok), '-infinity')) AS consecutive_failures,
       (SELECT status_code FROM last_bad) AS last_status_code,
       (SELECT coalesce(error_kind || ': ' || error, error_kind, error, 'HTTP ' || status_code) FROM last_bad) AS last_error,
       (SELECT started_at FROM last_bad) AS last_error_at,
       (SELECT at FROM last_ok) AS last_success_at
  FROM recent`;

/** Success rate and latency from recent attempts, plus the deliverer's circuit breaker. */
export async function targetHealth(app: AppContext, tenantId: string, id: string): Promise<Record<string, unknown>> {
  const dst = await findDestination(app, tenantId, id);
  const { rows } = await app.pool.query<Stats>(STATS_SQL, [id, tenantId, idAtOrAfter('att', Date.now() - 24 * 60 * 60 * 1000)]);
  const s = rows[0]!;
  const total = Number(s.total);
  const breaker = await readDestinationHealthState(app.redis, app.config.QUEUE_PREFIX, id).catch(() => null);
  const round = (v: number | null): number | null => (v === null ? null : Math.round(Number(v)));
  return {
    destination_id: id,
    state: dst.state,
    disabled_reason: dst.disabledReason,
    window: { hours: 24, attempts: total },
    success_rate: total ? Number(s.succeeded) / total : null,
    latency_ms: { p50: round(s.p50), p95: round(s.p95), p99: round(s.p99), avg: round(s.avg) },
    consecutive_failures: Number(s.consecutive_failures),
    last_error: s.last_error ? { message: s.last_error, status_code: s.last_status_code, at: iso(s.last_error_at) } : null,
    last_success_at: iso(s.last_success_at),
    circuit_breaker: breaker
      ? { state: breaker.state, consecutive_failures: breaker.consecutiveFailures, opened_at: iso(breaker.openedAt), last_error: breaker.lastError, failing_since: iso(breaker.failingSince) }
      : null,
  };
}

export const targetHealthView = {
  type: 'object',
  required: ['destination_id', 'state', 'success_rate', 'latency_ms', 'consecutive_failures', 'last_error', 'circuit_breaker'],
  properties: {
    destination_id: { type: 'string' },
    state: { type: 'string' },
    disabled_reason: { type: ['string', 'null'] },
    window: { type: 'object', properties: { hours: { type: 'integer' }, attempts: { type: 'integer' } } },
    success_rate: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    latency_ms: { type: 'object', properties: { p50: { type: ['integer', 'null'] }, p95: { type: ['integer', 'null'] }, p99: { type: ['integer', 'null'] }, avg: { type: ['integer', 'null'] } } },
    consecutive_failures: { type: 'integer' },
    last_error: { type: ['object', 'null'] },
    last_success_at: { type: ['string', 'null'], format: 'date-time' },
    circuit_breaker: { type: ['object', 'null'], description: 'The deliverer\'s breaker (closed, open, half_open); null when Redis cannot be read' },
  },
};
