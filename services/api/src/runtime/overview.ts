import { shownStatusSql } from '@hookline/delivery';
import { PROVIDERS } from '@hookline/signing';
import type { AppContext } from '../context';
import { iso } from '../lib/format';

const OVERVIEW_SQL = `
SELECT
  (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM ingesters WHERE tenant_id = $1 GROUP BY state) s) AS ingesters,
  (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM destinations WHERE tenant_id = $1 GROUP BY state) s) AS destinations,
  (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM delivery_flows WHERE tenant_id = $1 GROUP BY state) s) AS flows,
  (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT status, count(*) n FROM events WHERE tenant_id = $1 AND received_at > now() - interval '24 hours' GROUP BY status) s) AS events_24h,
  (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT ${shownStatusSql('d')} AS status, count(*) n FROM deliveries d WHERE tenant_id = $1 AND created_at > now() - interval '24 hours' GROUP BY 1) s) AS deliveries_24h,
  (SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status = 'exhausted') AS dlq_size,
  (SELECT count(*) FROM ingest_rejections WHERE tenant_id = $1 AND created_at > now() - interval '24 hours') AS rejections_24h`;

/** Counts for the dashboard's first page: config by state, last 24 h of traffic, the DLQ. */
export async function overview(app: AppContext, tenantId: string, plan: string): Promise<Record<string, unknown>> {
  const { rows } = await app.pool.query<Record<string, unknown>>(OVERVIEW_SQL, [tenantId]);
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

const SOURCES_SQL = `
SELECT i.provider, count(*) AS ingesters, coalesce(sum(ev.n), 0) AS events_24h, max(ev.last) AS last_event_at
  FROM ingesters i
  LEFT JOIN LATERAL (SELECT count(*) n, max(received_at) last FROM events e WHERE e.ingester_id = i.id AND e.received_at > now() - interval '24 hours') ev ON true
 WHERE i.tenant_id = $1 AND i.state <> 'DELETED'
 GROUP BY i.provider ORDER BY i.provider`;

/** Webhook sources: the providers this tenant receives from, with recent traffic. */
export async function sources(app: AppContext, tenantId: string): Promise<Record<string, unknown>> {
  const { rows } = await app.pool.query<{ provider: string; ingesters: string; events_24h: string; last_event_at: Date | null }>(SOURCES_SQL, [tenantId]);
  return {
    sources: rows.map((r) => ({ provider: r.provider, ingesters: Number(r.ingesters), events_24h: Number(r.events_24h), last_event_at: iso(r.last_event_at) })),
    supported_providers: [...PROVIDERS],
  };
}
