// GET /v1/traces carries a bounded trace per event (services/api/src/runtime/traces.ts):
// at most 20 deliveries per event (the first by flow id) and the latest 10 attempts of each
// delivery, read with a LIMIT per event and per delivery, and says when it cut something
// (`deliveries_truncated`, `attempts_truncated`, with links to the paged lists). Before, one
// page loaded every delivery and attempt of its events and grouped them in O(deliveries ×
// attempts): 100 events × 300 flows × 5 attempts took 251 s and returned 30 MB.
import { newId } from '@hookline/db';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertEvent, type Pipeline } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apitrcap');
});
afterAll(async () => {
  await h.close();
});

interface Step {
  name: string;
  at: string;
  delivery_id?: string;
  number?: number;
  duration_ms?: number;
  attempt_count?: number;
  attempts_truncated?: boolean;
  attempts_url?: string;
}

const MAX_DELIVERIES = 20;
const MAX_ATTEMPTS = 10;

/**
 * `flows` deliveries of one event, each to its own (made-up) flow, delivery i with
 * `attempts(i)` attempts whose duration_ms is i * 1000 + number: an attempt shown under the
 * wrong delivery is seen. Returns the deliveries by flow id.
 */
async function fanOut(tenantId: string, eventId: string, p: Pipeline, flows: number, attempts: (i: number) => number): Promise<{ id: string; flowId: string; attempts: number; i: number }[]> {
  const at = Date.now() - 60_000;
  const rows = Array.from({ length: flows }, (_, i) => ({ id: newId('dlv', at), flowId: newId('flw', at), attempts: attempts(i), i }));
  await h.db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, created_at, next_attempt_at)
     SELECT d.id, $1, $2, d.flow_id, $3, 'failed', d.n, $4::timestamptz, $4::timestamptz
     FROM unnest($5::text[], $6::text[], $7::int[]) AS d(id, flow_id, n)`,
    [tenantId, eventId, p.destinationId, new Date(at), rows.map((r) => r.id), rows.map((r) => r.flowId), rows.map((r) => r.attempts)],
  );
  await h.db.pool.query(
    `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, started_at, duration_ms)
     SELECT 'att_' || substr(md5(d.id || n), 1, 26), $1, d.id, n, 500, $2::timestamptz + (d.i * 100 + n) * interval '1 millisecond', d.i * 1000 + n
     FROM unnest($3::text[], $4::int[], $5::int[]) AS d(id, i, attempts), generate_series(1, d.attempts) AS n`,
    [tenantId, new Date(at), rows.map((r) => r.id), rows.map((r) => r.i), rows.map((r) => r.attempts)],
  );
  return rows.sort((a, b) => (a.flowId < b.flowId ? -1 : 1));
}

describe('GET /v1/traces bounds each trace', () => {
  it('carries the first 20 deliveries by flow id and the latest 10 attempts of each, marked truncated, each attempt under its own delivery', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const big = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' });
    // 30 deliveries; every third has 15 attempts (cut to 10), the others 3.
    const dels = await fanOut(t.tenantId, big, p, 30, (i) => (i % 3 === 0 ? 15 : 3));

    const res = await h.call('GET', `/v1/traces?event_id=${big}`, { key: t.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.traces).toHaveLength(1);
    const trace = res.body.traces[0];
    expect(trace).toMatchObject({ trace_id: `cor_${big}`, event_id: big, deliveries_truncated: true, attempts_truncated: true, deliveries_url: `/v1/deliveries?event_id=${big}` });
    const steps = trace.steps as Step[];

    const created = steps.filter((s) => s.name === 'delivery.created');
    const shown = dels.slice(0, MAX_DELIVERIES);
    expect(created.map((s) => s.delivery_id).sort()).toEqual(shown.map((d) => d.id).sort());

    for (const d of shown) {
      const step = created.find((s) => s.delivery_id === d.id)!;
      const cut = d.attempts > MAX_ATTEMPTS;
      expect(step).toMatchObject({ attempt_count: d.attempts, attempts_truncated: cut });
      if (cut) expect(step.attempts_url).toBe(`/v1/delivery-attempts?delivery_id=${d.id}`);
      else expect(step.attempts_url).toBeUndefined();
      const mine = steps.filter((s) => s.name === 'delivery.attempt' && s.delivery_id === d.id);
      // The latest attempts, each the delivery's own (duration_ms names its delivery).
      const first = cut ? d.attempts - MAX_ATTEMPTS + 1 : 1;
      expect(mine.map((s) => s.number)).toEqual(Array.from({ length: d.attempts - first + 1 }, (_, k) => first + k));
      expect(mine.map((s) => s.duration_ms)).toEqual(mine.map((s) => d.i * 1000 + s.number!));
    }
    // No attempt of a delivery left out, and nothing beyond the caps.
    const shownIds = new Set(shown.map((d) => d.id));
    expect(steps.filter((s) => s.name === 'delivery.attempt').every((s) => shownIds.has(s.delivery_id!))).toBe(true);
    expect(steps.filter((s) => s.name === 'delivery.attempt').length).toBe(shown.reduce((n, d) => n + Math.min(d.attempts, MAX_ATTEMPTS), 0));
    // Still one time line.
    expect(steps.map((s) => s.at)).toEqual([...steps.map((s) => s.at)].sort());
  });

  it('keeps a small trace whole, and caps every trace of a page on its own', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const small = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered', at: new Date(Date.now() - 120_000) });
    const smallDels = await fanOut(t.tenantId, small, p, 2, () => 2);
    const big = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
    await fanOut(t.tenantId, big, p, MAX_DELIVERIES + 1, () => MAX_ATTEMPTS);

    const res = await h.call('GET', '/v1/traces', { key: t.apiKey });
    expect(res.body.traces.map((x: { event_id: string }) => x.event_id)).toEqual([big, small]);
    const [bigTrace, smallTrace] = res.body.traces;
    // Exactly one delivery over the cap: cut; exactly the attempt cap: not cut.
    expect(bigTrace).toMatchObject({ deliveries_truncated: true, attempts_truncated: false });
    expect((bigTrace.steps as Step[]).filter((s) => s.name === 'delivery.created')).toHaveLength(MAX_DELIVERIES);
    expect((bigTrace.steps as Step[]).filter((s) => s.name === 'delivery.attempt')).toHaveLength(MAX_DELIVERIES * MAX_ATTEMPTS);

    expect(smallTrace).toMatchObject({ deliveries_truncated: false, attempts_truncated: false });
    expect(smallTrace.deliveries_url).toBeUndefined();
    const names = (smallTrace.steps as Step[]).map((s) => `${s.name}${s.delivery_id ? `:${s.delivery_id}` : ''}${s.number ? `#${s.number}` : ''}`);
    const [d0, d1] = [...smallDels].sort((a, b) => a.i - b.i);
    // Both deliveries were created in the same millisecond: by id, as before.
    const [c0, c1] = [d0!.id, d1!.id].sort();
    expect(names).toEqual([
      'received',
      'validated',
      'filtered',
      `delivery.created:${c0}`,
      `delivery.created:${c1}`,
      `delivery.attempt:${d0!.id}#1`,
      `delivery.attempt:${d0!.id}#2`,
      `delivery.attempt:${d1!.id}#1`,
      `delivery.attempt:${d1!.id}#2`,
    ]);
  });
});
