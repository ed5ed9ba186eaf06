import type { Prisma } from '@hookline/db';
import { shownStatus } from '@hookline/delivery';
import { receiptsByDelivery } from '@hookline/evidence';
import type { AppContext } from '../context';
import { deliveryWhere } from '../deliveries/delivery.queries';
import { findPage, pageBounds, pageResult, readPage, type PageResult } from '../http/pagination';
import { iso } from '../lib/format';

interface PayloadFacts {
  event_id: string;
  sha256: string;
  size_bytes: number;
  content_type: string | null;
  created_at: Date;
}

async function payloadFacts(app: AppContext, tenantId: string, eventIds: string[]): Promise<Map<string, PayloadFacts>> {
  if (!eventIds.length) return new Map();
  const { rows } = await app.pool.query<PayloadFacts>(
    `SELECT event_id, encode(sha256(body), 'hex') AS sha256, octet_length(body) AS size_bytes, content_type, created_at FROM event_payloads WHERE event_id = ANY($1::text[]) AND tenant_id = $2`,
    [eventIds, tenantId],
  );
  return new Map(rows.map((r) => [r.event_id, r]));
}

/**
 * Delivery evidence: one item per delivery that reached an end (delivered or exhausted):
 * what was sent (payload sha256 while retained), where, how many attempts, the final
 * status code, and the keyed receipt of every attempt with its Merkle inclusion proof
 * (proof and root null until the sealer has sealed the receipt's window). Read-only.
 */
export async function evidence(app: AppContext, tenantId: string, query: Record<string, unknown>): Promise<Record<string, unknown>> {
  const page = readPage(query, 'dlv');
  const base: Prisma.DeliveryWhereInput = deliveryWhere(tenantId, query);
  const where = base.status ? base : { ...base, status: { in: ['delivered', 'exhausted'] as ('delivered' | 'exhausted')[] } };
  const result = await findPage(page, (a) =>
    app.prisma.delivery.findMany({ ...a, where: { ...where, ...a.where }, include: { event: { select: { correlationId: true, type: true, receivedAt: true } } } }),
  );
  const [facts, receipts] = await Promise.all([
    payloadFacts(app, tenantId, [...new Set(result.items.map((d) => d.eventId))]),
    receiptsByDelivery(app.pool, tenantId, result.items.map((d) => d.id)),
  ]);
  return {
    evidence: result.items.map((d) => {
      const p = facts.get(d.eventId);
      return {
        id: `evd_${d.id.slice(4)}`,
        delivery_id: d.id,
        event_id: d.eventId,
        event_type: d.event.type,
        correlation_id: d.event.correlationId,
        destination_id: d.destinationId,
        outcome: shownStatus(d.status, d.leaseUntil),
        attempts: d.attemptCount,
        replays: d.replayCount,
        final_status_code: d.lastStatusCode,
        received_at: iso(d.event.receivedAt),
        delivered_at: iso(d.deliveredAt),
        exhausted_at: iso(d.exhaustedAt),
        payload: p ? { retained: true, sha256: p.sha256, size_bytes: Number(p.size_bytes) } : { retained: false },
        receipts: receipts.get(d.id) ?? [],
      };
    }),
    next_cursor: result.next_cursor,
    ...(result.next_offset !== undefined ? { next_offset: result.next_offset } : {}),
  };
}

/**
 * The stored raw payloads (what replay needs), newest first; metadata only, never bodies.
 * Paged over the tenant's events (events_tenant_id_id_idx; event_payloads has no tenant
 * index, and one on that hot table would cost every ingest), keeping those whose payload is
 * still stored, and only the page's rows are hashed: an offset skips events, never hashes
 * their bodies.
 */
export async function retainedPayloads(app: AppContext, tenantId: string, query: Record<string, unknown>): Promise<PageResult<Record<string, unknown> & { id: string }>> {
  const page = readPage(query, 'evt');
  const b = pageBounds(page);
  const { rows } = await app.pool.query<PayloadFacts>(
    `SELECT p.event_id, encode(sha256(p.body), 'hex') AS sha256, octet_length(p.body) AS size_bytes, p.content_type, p.created_at
       FROM (SELECT e.id FROM events e
              WHERE e.tenant_id = $1 AND ($2::text IS NULL OR e.id < $2)
                AND EXISTS (SELECT 1 FROM event_payloads x WHERE x.event_id = e.id)
              ORDER BY e.id DESC LIMIT $3 OFFSET $4) page
       JOIN event_payloads p ON p.event_id = page.id
      ORDER BY p.event_id DESC`,
    [tenantId, b.beforeId, b.take, b.skip],
  );
  return pageResult(
    rows.map((r) => ({ id: r.event_id, event_id: r.event_id, content_type: r.content_type, size_bytes: Number(r.size_bytes), sha256: r.sha256, retained_at: iso(r.created_at) })),
    page,
  );
}

/** The tenant's evidence pipeline for /v1/readiness: receipts awaiting a root, and the latest root. */
export async function evidenceReadiness(app: AppContext, tenantId: string): Promise<Record<string, unknown>> {
  const { rows } = await app.pool.query<{ unsealed: string; latest_root_at: Date | null }>(
    `SELECT (SELECT count(*) FROM evidence_receipts WHERE tenant_id = $1 AND merkle_root_id IS NULL) AS unsealed,
            (SELECT max(created_at) FROM merkle_roots WHERE tenant_id = $1) AS latest_root_at`,
    [tenantId],
  );
  return { ok: true, unsealed_receipts: Number(rows[0]?.unsealed ?? 0), latest_root_at: iso(rows[0]?.latest_root_at ?? null) };
}
