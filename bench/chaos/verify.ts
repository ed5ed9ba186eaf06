// The verdict: every acknowledged event reached every matching destination (a prompt 200
// at the receiver) or sits in the DLQ as exhausted; nothing arrived that was never
// acknowledged; duplicates counted.
import type { Pool } from '@hookline/db';
import type { ApiClient, HookSetup } from '../lib/api-client';
import type { DeliveryRecord } from '../procs/chaos-receiver.main';
import type { ChaosLoadResult } from './chaos-load';

export interface Finding {
  seq: number;
  eventId: string;
  destinationId: string;
  deliveryId: string | null;
  reason: string;
}

export interface Verdict {
  pass: boolean;
  acknowledgedEvents: number;
  unacknowledgedEvents: number;
  expectedDeliveries: number;
  delivered: number;
  inDlq: number;
  lost: number;
  lostSamples: Finding[];
  ackedEventsMissingInDb: number;
  deliveredNotAcknowledged: number;
  phantomDeliveries: number;
  duplicateDeliveries: number;
  duplicateRatePct: number;
  duplicatesGoalMet: boolean;
  duplicatesByFault: Record<string, number>;
  lateProcessedDuplicates: number;
  eventsPerKeyOverOne: number;
  okWhilePgDown: number;
  dlqApiMatchesDb: boolean;
  receiverRequests: number;
  dbEvents: number;
  dbDeliveries: number;
  deliveryStatusCounts: Record<string, number>;
}

interface Row {
  id: string;
  event_id: string;
  destination_id: string;
  status: string;
}

/** The DLQ as the API shows it: every exhausted delivery of the tenant, page by page. */
async function dlqFromApi(api: ApiClient): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  for (let page = 0; page < 10_000; page++) {
    const q: string = `/v1/tenants/${api.tenant.tenantId}/deliveries?status=exhausted&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await api.call<{ deliveries: Array<{ id: string; status: string }>; next_cursor: string | null }>('GET', q);
    if (r.status !== 200) throw new Error(`DLQ list: ${r.status} ${JSON.stringify(r.body)}`);
    for (const d of r.body.deliveries) if (d.status === 'exhausted') ids.add(d.id);
    cursor = r.body.next_cursor;
    if (!cursor || r.body.deliveries.length === 0) break;
  }
  return ids;
}

/**
 * Each duplicate (a second prompt 200 for one key) attributed to the first fault that began
 * within `windowMs` after the first 200: a send whose outcome was not yet recorded when the
 * deliverer died or PostgreSQL went away is sent again once its lease runs out.
 */
function duplicatesByFault(records: Iterable<DeliveryRecord>, faults: Array<{ kind: string; at: number }>, windowMs: number): Record<string, number> {
  const out: Record<string, number> = {};
  const sorted = [...faults].sort((a, b) => a.at - b.at);
  for (const rec of records) {
    const first = rec.okAt[0];
    if (first === undefined || rec.okAt.length < 2) continue;
    const f = sorted.find((x) => x.at >= first - 1000 && x.at - first <= windowMs);
    const k = f ? `${f.kind}@${new Date(f.at).toISOString().slice(11, 19)}` : 'no fault just after the first 200';
    out[k] = (out[k] ?? 0) + rec.okAt.length - 1;
  }
  return out;
}

export async function verify(pool: Pool, api: ApiClient, hooks: HookSetup[], load: ChaosLoadResult, rx: { requests: number; records: Array<[string, DeliveryRecord]> }, runId: string, faults: Array<{ kind: string; at: number }>, attributionWindowMs: number): Promise<Verdict> {
  const deliveries = (await pool.query<Row>('SELECT id, event_id, destination_id, status FROM deliveries')).rows;
  const events = (await pool.query<{ id: string; dedup_key: string | null }>('SELECT id, dedup_key FROM events')).rows;
  const dlq = await dlqFromApi(api);
  const received = new Map(rx.records);
  const byPair = new Map(deliveries.map((d) => [`${d.event_id}|${d.destination_id}`, d]));
  const byId = new Map(deliveries.map((d) => [d.id, d]));
  const eventIds = new Set(events.map((e) => e.id));
  const ackedIds = new Set([...load.acked.values()].map((a) => a.eventId));

  let expected = 0, delivered = 0, inDlq = 0, missingInDb = 0;
  const lost: Finding[] = [];
  for (const ack of load.acked.values()) {
    if (!eventIds.has(ack.eventId)) missingInDb++;
    for (const destinationId of hooks[ack.hook]!.destinationIds) {
      expected++;
      const row = byPair.get(`${ack.eventId}|${destinationId}`);
      const rec = row ? received.get(row.id) : undefined;
      if (row && rec && rec.ok > 0) delivered++;
      else if (row && row.status === 'exhausted' && dlq.has(row.id)) inDlq++;
      else lost.push({ seq: ack.seq, eventId: ack.eventId, destinationId, deliveryId: row?.id ?? null, reason: row ? `status ${row.status}${dlq.has(row.id) ? '' : ' (not in the API DLQ)'}, no 200 at the receiver` : 'no delivery row' });
    }
  }
  let notAcked = 0, phantom = 0, dup = 0, lateDup = 0;
  for (const [key, rec] of received) {
    const row = byId.get(key);
    if (!row) phantom++;
    else if (!ackedIds.has(row.event_id)) notAcked++;
    dup += Math.max(0, rec.ok - 1);
    lateDup += Math.max(0, rec.ok + rec.late - 1) - Math.max(0, rec.ok - 1);
  }
  const perKey = new Map<string, number>();
  for (const e of events) if (e.dedup_key?.startsWith(runId)) perKey.set(e.dedup_key, (perKey.get(e.dedup_key) ?? 0) + 1);
  const statusCounts: Record<string, number> = {};
  for (const d of deliveries) statusCounts[d.status] = (statusCounts[d.status] ?? 0) + 1;
  const dbExhausted = new Set(deliveries.filter((d) => d.status === 'exhausted').map((d) => d.id));
  const duplicateRatePct = expected ? Math.round((dup / expected) * 100_000) / 1000 : 0;
  const v: Verdict = {
    pass: false,
    acknowledgedEvents: load.acked.size,
    unacknowledgedEvents: load.unacked.length,
    expectedDeliveries: expected,
    delivered,
    inDlq,
    lost: lost.length,
    lostSamples: lost.slice(0, 20),
    ackedEventsMissingInDb: missingInDb,
    deliveredNotAcknowledged: notAcked,
    phantomDeliveries: phantom,
    duplicateDeliveries: dup,
    duplicateRatePct,
    duplicatesGoalMet: duplicateRatePct < 0.5,
    duplicatesByFault: duplicatesByFault(received.values(), faults, attributionWindowMs),
    lateProcessedDuplicates: lateDup,
    eventsPerKeyOverOne: [...perKey.values()].filter((n) => n > 1).length,
    okWhilePgDown: load.okWhilePgDown.length,
    dlqApiMatchesDb: dbExhausted.size === dlq.size && [...dbExhausted].every((id) => dlq.has(id)),
    receiverRequests: rx.requests,
    dbEvents: events.length,
    dbDeliveries: deliveries.length,
    deliveryStatusCounts: statusCounts,
  };
  v.pass = v.lost === 0 && v.ackedEventsMissingInDb === 0 && v.deliveredNotAcknowledged === 0 && v.phantomDeliveries === 0 && v.okWhilePgDown === 0 && v.acknowledgedEvents > 0;
  return v;
}
