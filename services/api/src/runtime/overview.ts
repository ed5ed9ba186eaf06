import { shownStatusSql } from '@hookline/delivery';
import { PROVIDERS } from '@hookline/signing';
import type { AppContext } from '../context';
import { idAtOrAfter } from '../http/id-window';
import { iso } from '../lib/format';

const DAY_MS = 24 * 60 * 60 * 1000;

// The last 24 h of events, deliveries and rejections: their time columns have no index, so
// each count also takes an id lower bound ($2 events, $3 deliveries, $4 rejections: the
// window and an hour more, id-window.ts) and (tenant_id, id) reads about a day of rows, not
// the tenant's whole history. The exact time test stays, so the counts are the same.
const OVERVIEW_SQL = `
SELECT
  (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM ingesters WHERE tenant_id = $1 GROUP BY state) s) AS ingesters,
  (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM destinations WHERE tenant_id = $1 GROUP BY state) s) AS destinations,
  (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM delivery_flows WHERE tenant_id = $1 GROUP BY state) s) AS flows,
  (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT status, count(*) n FROM events WHERE tenant_id = $1 AND id >= $2 AND received_at > now() - interval '24 hours' GROUP BY status) s) AS events_24h,
  (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT ${shownStatusSql('d')} AS status, count(*) n FROM deliveries d WHERE tenant_id = $1 AND id >= $3 AND created_at > now() - interval '24 hours' GROUP BY 1) s) AS deliveries_24h,
  (SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status = 'exhausted') AS dlq_size,
  (SELECT count(*) FROM ingest_rejections WHERE tenant_id = $1 AND id >= $4 AND created_at > now() - interval '24 hours') AS rejections_24h`;

/** Counts for the dashboard's first page: config by state, last 24 h of traffic, the DLQ. */
export async function overview(app: AppContext, tenantId: string, plan: string): Promise<Record<string, unknown>> {
  const since = Date.now() - DAY_MS;
  const { rows } = await app.pool.query<Record<string, unknown>>(OVERVIEW_SQL, [tenantId, idAtOrAfter('evt', since), idAtOrAfter('dlv', since), idAtOrAfter('rej', since)]);
  const r = rows[0]!;
  return {
    tenant_id: tenantId,
    plan,
    ingesters: r['ingesters'],
    destinations: r['destinations'],
    flows: r['flows'],
    events_24h: r['events_24h'],
    deliveries_24h: r['deliveries_24h'],
    dlq_size: Number(r['dlq_size']),
    rejections_24h: Number(r['rejections_24h']),
  };
}

// The tenant's events of the last 24 h counted per ingester in one pass over its window
// ((tenant_id, id) from the id lower bound $2, as OVERVIEW_SQL), then summed per provider.
// (A count per ingester, each over the window, read the window once per ingester whenever
// the planner took the primary key for it.)
const SOURCES_SQL = `
SELECT i.provider, count(*) AS ingesters, coalesce(sum(ev.n), 0) AS events_24h, max(ev.last) AS last_event_at
  FROM ingesters i
  LEFT JOIN (SELECT e.ingester_id, count(*) n, max(e.received_at) last FROM events e
              WHERE e.tenant_id = $1 AND e.id >= $2 AND e.received_at > now() - interval '24 hours'
              GROUP BY e.ingester_id) ev ON ev.ingester_id = i.id
 WHERE i.tenant_id = $1 AND i.state <> 'DELETED'
 GROUP BY i.provider ORDER BY i.provider`;

/** Webhook sources: the providers this tenant receives from, with recent traffic. */
export async function sources(app: AppContext, tenantId: string): Promise<Record<string, unknown>> {
  const { rows } = await app.pool.query<{ provider: string; ingesters: string; events_24h: string; last_event_at: Date | null }>(SOURCES_SQL, [tenantId, idAtOrAfter('evt', Date.now() - DAY_MS)]);
  return {
    sources: rows.map((r) => ({ provider: r.provider, ingesters: Number(r.ingesters), events_24h: Number(r.events_24h), last_event_at: iso(r.last_event_at) })),
    supported_providers: [...PROVIDERS],
  };
}
