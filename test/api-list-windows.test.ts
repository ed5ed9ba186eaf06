// List paging and time windows at the edges:
// - a cursor is of one list: another list's cursor (another kind of id) is a 400 naming
//   `cursor`, where it used to give an empty page or the list from its start;
// - `until` before `since` is a 400 naming `until`;
// - time windows (since/until, the 24 h counts) also bound the id (ids are time-sortable,
//   http/id-window.ts), and answer the same rows as the time test alone: rows whose id was
//   made up to an hour away from their time included or left out by their time only.
// The plans those bounds give are in test/api-window-plans.test.ts.
import { newId } from '@hookline/db';
import { startApi, type ApiHarness, VALIDATION } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, type Pipeline } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apilistwin');
});
afterAll(async () => {
  await h.close();
});

const MIN = 60_000;
const HOUR = 60 * MIN;

describe('cursors', () => {
  it('refuses a cursor of another list with 400 naming cursor, and takes its own', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const T = `/v1/tenants/${t.tenantId}`;
    const dlvs: string[] = [];
    for (let i = 0; i < 2; i++) dlvs.push(await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' }), p, { status: 'delivered', attempts: 2 }));
    const cursorOf = async (path: string): Promise<string> => {
      const res = await h.call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=1`, { key: t.apiKey });
      expect({ path, status: res.status, next: typeof res.body.next_cursor }).toEqual({ path, status: 200, next: 'string' });
      return res.body.next_cursor;
    };
    const own: Record<string, string> = {
      [`${T}/deliveries`]: await cursorOf(`${T}/deliveries`),
      [`${T}/events`]: await cursorOf(`${T}/events`),
      '/v1/traces': await cursorOf('/v1/traces'),
      '/v1/delivery-attempts': await cursorOf('/v1/delivery-attempts'),
      [`/v1/deliveries/${dlvs[0]}/attempts`]: await cursorOf(`/v1/deliveries/${dlvs[0]}/attempts`),
      [`${T}/audit-logs`]: await cursorOf(`${T}/audit-logs`),
      '/v1/evidence': await cursorOf('/v1/evidence'),
      '/v1/retained-payloads': await cursorOf('/v1/retained-payloads'),
    };
    const evt = own[`${T}/events`]!;
    const dlv = own[`${T}/deliveries`]!;
    const att = own['/v1/delivery-attempts']!;
    const cases: [string, string][] = [
      // evt_ sorts after dlv_ (the list from its start), att_ before it (an empty page).
      [`${T}/deliveries`, evt],
      [`${T}/deliveries`, att],
      ['/v1/deliveries?status=exhausted', evt],
      [`${T}/events`, dlv],
      ['/v1/traces', dlv],
      ['/v1/delivery-attempts', dlv],
      [`/v1/deliveries/${dlvs[0]}/attempts`, dlv],
      [`${T}/audit-logs`, evt],
      ['/v1/evidence', evt],
      ['/v1/retained-payloads', dlv],
      [`${T}/ingesters`, dlv],
      [`${T}/destinations`, evt],
      ['/v1/targets', evt],
      [`${T}/delivery-flows`, evt],
      [`${T}/saved-payloads`, evt],
      [`${T}/clusters`, evt],
      [`${T}/api-keys`, evt],
      [`${T}/mcp-keys`, evt],
      [`${T}/ingesters/${p.ingesterId}/rejections`, evt],
      ['/v1/evidence/merkle-roots', evt],
    ];
    for (const [path, cursor] of cases) {
      const res = await h.call('GET', `${path}${path.includes('?') ? '&' : '?'}cursor=${cursor}`, { key: t.apiKey });
      expect({ path, status: res.status, type: res.body.type, errors: res.body.errors }).toEqual({
        path,
        status: 400,
        type: VALIDATION,
        errors: [{ field: 'cursor', message: 'is not a cursor of this list' }],
      });
    }
    // A list's own cursor continues it.
    for (const [path, cursor] of Object.entries(own)) {
      const res = await h.call('GET', `${path}?limit=1&cursor=${cursor}`, { key: t.apiKey });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    // Not an id at all: as before.
    expect((await h.call('GET', `${T}/deliveries?cursor=zzz`, { key: t.apiKey })).body.errors).toEqual([{ field: 'cursor', message: 'is not a cursor this API issued' }]);
  });
});

describe('since and until', () => {
  it('refuses until before since with 400 naming until; equal is an empty window', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const T = `/v1/tenants/${t.tenantId}`;
    const reversed = 'since=2025-01-02T00:00:00Z&until=2025-01-01T23:59:59.999Z';
    for (const path of [`${T}/deliveries`, '/v1/deliveries?status=exhausted', `${T}/events`, '/v1/traces', '/v1/delivery-attempts', `${T}/audit-logs`, '/v1/evidence', `${T}/ingesters/${p.ingesterId}/rejections`]) {
      const res = await h.call('GET', `${path}${path.includes('?') ? '&' : '?'}${reversed}`, { key: t.apiKey });
      expect({ path, status: res.status, type: res.body.type, errors: res.body.errors }).toEqual({ path, status: 400, type: VALIDATION, errors: [{ field: 'until', message: 'must not be before since' }] });
    }
    const replay = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { since: '2025-01-02T00:00:00Z', until: '2025-01-01T00:00:00Z' } });
    expect([replay.status, replay.body.errors]).toEqual([400, [{ field: 'until', message: 'must not be before since' }]]);
    // An offset spelling of the same instant is the same instant: an empty window, not an error.
    const empty = await h.call('GET', `${T}/deliveries?since=2025-01-01T00:00:00Z&until=${encodeURIComponent('2025-01-01T01:00:00+01:00')}`, { key: t.apiKey });
    expect([empty.status, empty.body.deliveries]).toEqual([200, []]);
  });
});

describe('time windows', () => {
  // Rows at a time, with an id made `idShiftMs` away from it (what clock skew or the edge
  // report window can do, within the hour the id bounds allow for).
  async function event(tenantId: string, p: Pipeline, atMs: number, idShiftMs = 0): Promise<string> {
    const id = newId('evt', atMs + idShiftMs);
    await h.db.pool.query(
      `INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id, received_at, validated_at) VALUES ($1, $2, $3, 'x', 'delivered', $4, $5, $5)`,
      [id, tenantId, p.ingesterId, `cor_${id}`, new Date(atMs)],
    );
    return id;
  }
  async function delivery(tenantId: string, p: Pipeline, eventId: string, atMs: number, idShiftMs = 0): Promise<string> {
    const id = newId('dlv', atMs + idShiftMs);
    await h.db.pool.query(
      `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, created_at) VALUES ($1, $2, $3, $4, $5, 'delivered', 1, $6)`,
      [id, tenantId, eventId, p.flowId, p.destinationId, new Date(atMs)],
    );
    return id;
  }
  async function attempt(tenantId: string, deliveryId: string, n: number, atMs: number, idShiftMs = 0): Promise<string> {
    const id = newId('att', atMs + idShiftMs);
    await h.db.pool.query(
      `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, started_at, duration_ms) VALUES ($1, $2, $3, $4, 200, $5, 10)`,
      [id, tenantId, deliveryId, n, new Date(atMs)],
    );
    return id;
  }
  async function rejection(tenantId: string, p: Pipeline, atMs: number, idShiftMs = 0): Promise<string> {
    const id = newId('rej', atMs + idShiftMs);
    await h.db.pool.query(`INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code, created_at) VALUES ($1, $2, $3, 'signature_mismatch', $4)`, [id, tenantId, p.ingesterId, new Date(atMs)]);
    return id;
  }
  async function audit(tenantId: string, atMs: number, idShiftMs = 0): Promise<string> {
    const id = newId('aud', atMs + idShiftMs);
    await h.db.pool.query(`INSERT INTO audit_logs (id, tenant_id, actor, action, outcome, created_at) VALUES ($1, $2, 'api_key:x', 'window.test', 'success', $3)`, [id, tenantId, new Date(atMs)]);
    return id;
  }

  it('the 24 h counts of /v1/overview, /v1/sources and target health count by time, whatever the id says within the hour', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const now = Date.now();
    // [age, id shift, in the last 24 h?]
    const cases: [number, number, boolean][] = [
      [23 * HOUR, 0, true],
      [25 * HOUR, 0, false],
      [48 * HOUR, 0, false],
      [23 * HOUR + 30 * MIN, 50 * MIN, true],
      [23 * HOUR + 30 * MIN, -50 * MIN, true],
      [24 * HOUR + 30 * MIN, 50 * MIN, false],
      [24 * HOUR + 30 * MIN, -50 * MIN, false],
      [MIN, 0, true],
    ];
    let lastIn = 0;
    let n = 0;
    for (const [age, shift, inWindow] of cases) {
      const at = now - age;
      const evt = await event(t.tenantId, p, at, shift);
      const dlv = await delivery(t.tenantId, p, evt, at, shift);
      await attempt(t.tenantId, dlv, ++n, at, shift);
      await rejection(t.tenantId, p, at, shift);
      if (inWindow) lastIn = Math.max(lastIn, at);
    }
    const inside = cases.filter((c) => c[2]).length;
    const ov = await h.call('GET', '/v1/overview', { key: t.apiKey });
    expect(ov.body).toMatchObject({ events_24h: { delivered: inside }, deliveries_24h: { delivered: inside }, rejections_24h: inside });
    const src = await h.call('GET', '/v1/sources', { key: t.apiKey });
    expect(src.body.sources).toEqual([{ provider: 'generic', ingesters: 1, events_24h: inside, last_event_at: new Date(lastIn).toISOString() }]);
    const health = await h.call('GET', `/v1/targets/${p.destinationId}/health`, { key: t.apiKey });
    expect(health.body).toMatchObject({ window: { hours: 24, attempts: inside }, success_rate: 1 });
  });

  it('since/until list the rows of the window by their time: since included, until not, ids up to an hour off', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const since = Date.now() - 10 * HOUR;
    const until = since + 3 * HOUR;
    // [time, id shift, listed?]
    const cases: [number, number, boolean][] = [
      [since, 0, true],
      [since, -50 * MIN, true],
      [since - 1, 50 * MIN, false],
      [since - 2 * HOUR, 0, false],
      [since + HOUR, 0, true],
      [until - 1, 50 * MIN, true],
      [until - 1, -50 * MIN, true],
      [until, 0, false],
      [until, -50 * MIN, false],
      [until + 2 * HOUR, 0, false],
    ];
    const want: Record<string, string[]> = { events: [], deliveries: [], delivery_attempts: [], audit_logs: [], rejections: [] };
    let n = 0;
    for (const [at, shift, listed] of cases) {
      const evt = await event(t.tenantId, p, at, shift);
      const dlv = await delivery(t.tenantId, p, evt, at, shift);
      const att = await attempt(t.tenantId, dlv, ++n, at, shift);
      const rej = await rejection(t.tenantId, p, at, shift);
      const aud = await audit(t.tenantId, at, shift);
      if (listed) {
        want['events']!.push(evt);
        want['deliveries']!.push(dlv);
        want['delivery_attempts']!.push(att);
        want['rejections']!.push(rej);
        want['audit_logs']!.push(aud);
      }
    }
    const window = `since=${new Date(since).toISOString()}&until=${new Date(until).toISOString()}&limit=100`;
    const T = `/v1/tenants/${t.tenantId}`;
    const lists: [string, string, string][] = [
      [`${T}/events?${window}`, 'events', 'id'],
      [`/v1/traces?${window}`, 'traces', 'event_id'],
      [`${T}/deliveries?${window}`, 'deliveries', 'id'],
      [`/v1/delivery-attempts?${window}`, 'delivery_attempts', 'id'],
      [`${T}/audit-logs?action=window.test&${window}`, 'audit_logs', 'id'],
      [`${T}/ingesters/${p.ingesterId}/rejections?${window}`, 'rejections', 'id'],
    ];
    for (const [path, key, field] of lists) {
      const res = await h.call('GET', path, { key: t.apiKey });
      const wanted = want[key === 'traces' ? 'events' : key]!;
      // Newest first is id order; ids here are shifted, so compare as sets, then the order by id.
      const got: string[] = res.body[key].map((r: Record<string, string>) => r[field]);
      expect({ path, got: [...got].sort() }).toEqual({ path, got: [...wanted].sort() });
      expect(got).toEqual([...got].sort().reverse());
    }
  });
});
