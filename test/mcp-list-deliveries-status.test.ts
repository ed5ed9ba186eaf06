// The MCP tool list_deliveries filters by status as the REST list does (statusWhere): the
// shown status, `delivering` for a claimable delivery under a live lease, and a claimable
// status only for rows without one. The filter is a test on the stored status column, so
// deliveries_tenant_id_status_id_idx finds a page; it used to compare the shown status (a
// CASE) row by row, walking deliveries_pkey through every delivery of every tenant for a
// status with few or no rows (an empty page read the whole table).
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { newId } from '@hookline/db';
import { seedTenant } from '@hookline/testing';
import type { McpDeps } from '../services/api/src/mcp/mcp-deps';
import { listDeliveries } from '../services/api/src/mcp/mcp-queries';
import { callTool as call, mcpKey, startMcp, type McpHarness } from './mcp-harness';
import { insertDestination, insertEvent, insertFlow, insertIngester } from './router-fixtures';
import { analysingPool, planReads } from './support/plan-reads';

let h: McpHarness;
let client: Client;
let tenantId: string;
/** Delivery ids of the tenant by what list_deliveries should show them as. */
const shown: Record<string, string[]> = { pending: [], delivering: [], delivered: [], failed: [], exhausted: [], replaying: [] };
const HISTORY = 20_000;

beforeAll(async () => {
  h = await startMcp('mcplistst');
  const pool = h.db.pool;
  const tenant = await seedTenant(pool);
  tenantId = tenant.tenantId;
  const other = (await seedTenant(pool)).tenantId;
  client = await h.client((await mcpKey(h, tenant)).key);

  // A long history first (older ids): the other tenant's deliveries and this tenant's, all
  // delivered, interleaved in id order.
  for (const [k, t] of [other, tenantId].entries()) {
    const ingesterId = await insertIngester(pool, t);
    const destinationId = await insertDestination(pool, t);
    const flowId = await insertFlow(pool, { tenantId: t, ingesterId, destinationId });
    const eventId = await insertEvent(pool, { tenantId: t, ingesterId, status: 'delivered' });
    await pool.query(
      `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, delivered_at, created_at)
       SELECT 'dlv_0' || lpad((2 * i + ${k})::text, 25, '0'), $1, $2, $3 || i, $4, 'delivered', 1, now(), now() FROM generate_series(1, ${HISTORY}) i`,
      [t, eventId, `${flowId}_h`, destinationId],
    );
  }

  // This tenant's deliveries in every state, newest ids; the other tenant has the same kinds.
  for (const t of [tenantId, other]) {
    const ingesterId = await insertIngester(pool, t);
    const destinationId = await insertDestination(pool, t);
    const flowId = await insertFlow(pool, { tenantId: t, ingesterId, destinationId });
    const rows: [stored: string, lease: 'live' | 'expired' | null, shows: string][] = [
      ['pending', null, 'pending'],
      ['pending', 'expired', 'pending'],
      ['pending', 'live', 'delivering'],
      ['failed', null, 'failed'],
      ['failed', 'live', 'delivering'],
      ['failed', 'expired', 'failed'],
      ['replaying', null, 'replaying'],
      ['replaying', 'live', 'delivering'],
      ['delivered', null, 'delivered'],
      // A lease left on a row that is no longer claimable (delivered, exhausted) changes nothing.
      ['delivered', 'live', 'delivered'],
      ['exhausted', null, 'exhausted'],
      ['exhausted', 'live', 'exhausted'],
    ];
    for (const [stored, lease, shows] of rows) {
      const eventId = await insertEvent(pool, { tenantId: t, ingesterId, status: 'filtered' });
      const id = newId('dlv');
      await pool.query(
        `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, lease_owner, lease_until)
         VALUES ($1, $2, $3, $4, $5, $6::"DeliveryStatus", 1, CASE WHEN $7::text IS NOT NULL THEN 'd:1' END,
                 CASE $7::text WHEN 'live' THEN now() + interval '5 minutes' WHEN 'expired' THEN now() - interval '5 minutes' END)`,
        [id, t, eventId, flowId, destinationId, stored, lease],
      );
      if (t === tenantId) shown[shows]!.push(id);
    }
  }
  await pool.query('ANALYZE');
});

afterAll(async () => {
  await h.close();
});

const newestFirst = (ids: string[]): string[] => [...ids].sort().reverse();

test('each status lists exactly the tenant\'s deliveries shown in it, newest first, as before', async () => {
  for (const [status, ids] of Object.entries(shown)) {
    const res = await call(client, 'list_deliveries', { status, limit: 100 });
    expect({ status, isError: res.isError }).toEqual({ status, isError: false });
    const listed: { id: string; status: string }[] = res.body.deliveries;
    if (status === 'delivered') {
      // Then the tenant's delivered history, after its newer rows.
      expect(listed.slice(0, ids.length).map((d) => d.id)).toEqual(newestFirst(ids));
      expect(listed).toHaveLength(100);
    } else {
      expect({ status, ids: listed.map((d) => d.id) }).toEqual({ status, ids: newestFirst(ids) });
    }
    for (const d of listed) expect(d.status).toBe(status);
  }
  // Paging through a status keeps the filter: pages of one, the cursor continues below.
  const first = await call(client, 'list_deliveries', { status: 'delivering', limit: 1 });
  const second = await call(client, 'list_deliveries', { status: 'delivering', limit: 1, cursor: first.body.next_cursor });
  const third = await call(client, 'list_deliveries', { status: 'delivering', limit: 1, cursor: second.body.next_cursor });
  expect([...first.body.deliveries, ...second.body.deliveries, ...third.body.deliveries].map((d: { id: string }) => d.id)).toEqual(newestFirst(shown['delivering']!));
  expect(third.body.next_cursor).toBeNull();
  // No status: everything of the tenant, the filters on event and destination still apply.
  const all = await call(client, 'list_deliveries', { limit: 12 });
  expect(all.body.deliveries.map((d: { id: string }) => d.id)).toEqual(newestFirst(Object.values(shown).flat()));
});

test('a status reads its rows through the status index, not every delivery in id order', async () => {
  const analysing = analysingPool(h.db.pool);
  const deps = { pool: analysing.pool } as unknown as McpDeps;
  for (const status of Object.keys(shown)) {
    await listDeliveries(deps, tenantId, { status, limit: 20 });
    const r = planReads(analysing.plan()!, ['deliveries']);
    const read = r.reads['deliveries']!;
    // The history is 40,000 delivered rows; a page of 21 reads about 21 rows, an open status a
    // few dozen (the tenant's open rows; the leased ones among them for `delivering`).
    expect({ status, seqScans: r.seqScans, atMost100: read <= 100, read }).toEqual({ status, seqScans: [], atMost100: true, read });
  }
});
