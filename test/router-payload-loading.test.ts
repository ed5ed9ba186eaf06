// The router reads stored requests (event_payloads) only when a filter that still has to run
// reads headers, query or body, and then in chunks bounded by bytes, one at a time: a
// backlog of large bodies read in one query, for filters that looked only at the event
// type, ran it out of memory.
import type { Pool } from '@hookline/db';
import { routeEvents, type RouteDeps } from '../services/router/src/route-events';
import type { TestDatabase } from '@hookline/testing';
import { deliveriesOf, eventState, ingesterWithFlows, insertEvent, openRouterTest, routeDepsOf, WatchedFlowCache, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let deps: RouteDeps;
let tenantId: string;

beforeAll(async () => {
  t = await openRouterTest('rpayload');
  ({ db, tenantId } = t);
  deps = routeDepsOf(t);
});

afterAll(() => t.close());

interface PayloadRead {
  /** The event ids the statement asked for. */
  asked: string[];
  /** The rows it returned: event id and body bytes. */
  rows: Array<{ id: string; bytes: number }>;
}

/** The real pool, watched: every statement that reads event_payloads, with what it returned; `log` gets `read`. */
function watchedPool(log: string[] = []): { pool: Pool; reads: PayloadRead[] } {
  const reads: PayloadRead[] = [];
  const pool = new Proxy(db.pool, {
    get: (target, prop, receiver) =>
      prop === 'query'
        ? async (q: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
            const text = typeof q === 'string' ? q : q.text;
            const res = await target.query(q as string, values);
            if (/event_payloads/.test(text)) {
              const args = typeof q === 'string' ? values! : q.values!;
              reads.push({
                asked: [...(args[0] as string[])].sort(),
                rows: (res.rows as Array<{ event_id: string; body: Buffer | null }>).map((r) => ({ id: r.event_id, bytes: r.body?.length ?? 0 })),
              });
              log.push('read');
            }
            return res;
          }
        : Reflect.get(target, prop, receiver),
  });
  return { pool, reads };
}

describe('router: stored requests read only when a filter reads them', () => {
  it('filters on the event type or source (flows and the ingester filter) read no stored request at all', async () => {
    const { ingesterId, flowIds } = await ingesterWithFlows(t, [
      { event_types: ['invoice.*'] },
      { match: { type: 'invoice.paid', 'source.provider': 'stripe' } },
      { jsonpath: "$.source[?(@.provider == 'stripe')]" },
      { event_types: ['charge.*'] },
    ], 'stripe');
    await db.pool.query(`UPDATE ingesters SET filters = $2::jsonb WHERE id = $1`, [ingesterId, JSON.stringify({ event_types: ['invoice.*', 'charge.*'] })]);
    const big = JSON.stringify({ pad: 'x'.repeat(200_000) });
    const invoice = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid', body: big });
    const other = await insertEvent(db.pool, { tenantId, ingesterId, type: 'customer.created', body: big });
    const { pool, reads } = watchedPool();

    const out = await routeEvents({ ...deps, pool }, { eventIds: [invoice, other] });

    expect(reads).toEqual([]);
    expect(out).toMatchObject({ routed: 2, unmatched: 1 });
    expect((await deliveriesOf(db.pool, [invoice, other])).map((r) => [r.event_id, r.flow_id]).sort()).toEqual(flowIds.slice(0, 3).map((f) => [invoice, f]).sort());
    expect((await eventState(db.pool, other)).status_reason).toBe('ingester_filter_rejected');
  });

  it('tests event types before reading: only events whose type a body filter accepts have their stored request read', async () => {
    const { ingesterId, flowIds } = await ingesterWithFlows(t, [{ event_types: ['charge.*'], match: { 'body.kind': 'wanted' } }], 'stripe');
    const wrongType = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid', body: JSON.stringify({ kind: 'wanted' }) });
    const wanted = await insertEvent(db.pool, { tenantId, ingesterId, type: 'charge.succeeded', body: JSON.stringify({ kind: 'wanted' }) });
    const unwanted = await insertEvent(db.pool, { tenantId, ingesterId, type: 'charge.failed', body: JSON.stringify({ kind: 'other' }) });
    const { pool, reads } = watchedPool();

    await routeEvents({ ...deps, pool }, { eventIds: [wrongType, wanted, unwanted] });

    expect(reads.flatMap((r) => r.asked).sort()).toEqual([wanted, unwanted].sort());
    expect((await deliveriesOf(db.pool, [wrongType, wanted, unwanted])).map((r) => [r.event_id, r.flow_id])).toEqual([[wanted, flowIds[0]]]);
    expect((await eventState(db.pool, wrongType)).status_reason).toBe('filter_rejected');
    expect((await eventState(db.pool, unwanted)).status_reason).toBe('filter_rejected');
  });

  it('reads stored requests in chunks of at most payloadChunkBytes (a larger one alone), evaluating each chunk before reading the next', async () => {
    const log: string[] = [];
    const { ingesterId, flowIds } = await ingesterWithFlows(t, [{ match: { 'body.kind': 'wanted' } }], 'stripe');
    const body = (kind: string, size: number): string => {
      const s = JSON.stringify({ kind, pad: '' });
      return JSON.stringify({ kind, pad: 'p'.repeat(size - s.length) });
    };
    const ids: string[] = [];
    const expected: string[] = [];
    for (let i = 0; i < 9; i++) {
      // 10 KB each, every third one wanted; the fifth is 50 KB, over the bound on its own.
      const kind = i % 3 === 0 ? 'wanted' : 'other';
      const id = await insertEvent(db.pool, { tenantId, ingesterId, type: 'invoice.paid', body: body(kind, i === 4 ? 50_000 : 10_000) });
      ids.push(id);
      if (kind === 'wanted') expected.push(id);
    }
    const bound = 25_000;
    const { pool, reads } = watchedPool(log);
    const flows = new WatchedFlowCache(db.pool, log);

    const out = await routeEvents({ ...deps, pool, flows, payloadChunkBytes: bound }, { eventIds: ids });

    expect(out).toMatchObject({ routed: 9, unmatched: 6 });
    expect((await deliveriesOf(db.pool, ids)).map((r) => [r.event_id, r.flow_id]).sort()).toEqual(expected.map((e) => [e, flowIds[0]]).sort());
    // Every event's request was read once, in several reads, each within the bound or alone.
    expect(reads.flatMap((r) => r.rows.map((x) => x.id)).sort()).toEqual([...ids].sort());
    expect(reads.length).toBeGreaterThanOrEqual(4);
    for (const r of reads) {
      const bytes = r.rows.reduce((n, x) => n + x.bytes, 0);
      expect(r.rows.length === 1 || bytes <= bound).toBe(true);
    }
    expect(reads.some((r) => r.rows.length === 1 && r.rows[0]!.bytes === 50_000)).toBe(true);
    // Chunk by chunk: each chunk's events are evaluated before the next chunk is read.
    const evaluatedPerRead: number[] = [];
    for (const entry of log) {
      if (entry === 'read') evaluatedPerRead.push(0);
      else evaluatedPerRead[evaluatedPerRead.length - 1]! += 1;
    }
    expect(evaluatedPerRead).toEqual(reads.map((r) => r.rows.length));
  });
});
