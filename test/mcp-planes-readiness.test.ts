// list_planes and GET /v1/mcp/planes page the tenant's edge clusters (limit, cursor,
// next_cursor, has_more) instead of cutting them at 100; get_readiness reports only the
// tenant's own figures: the shared queues as ok or not (never their depths, which are every
// tenant's), and the tenant's open deliveries counted in PostgreSQL up to a bound.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { newId } from '@hookline/db';
import { OPEN_DELIVERIES_CAP } from '../services/api/src/mcp/mcp-queries';
import { callTool as call, startMcp, twoTenantsWithKey, type McpHarness, type TenantData } from './mcp-harness';
import { insertFlow } from './router-fixtures';

let h: McpHarness;
let mine: TenantData;
let theirs: TenantData;
let client: Client;
let headers: Record<string, string>;

beforeAll(async () => {
  h = await startMcp('mcpplanes');
  ({ mine, theirs, client, headers } = await twoTenantsWithKey(h, ['mcp:read:planes', 'mcp:read:health']));
});
afterAll(async () => {
  await h.close();
});

const addClusters = (tenantId: string, n: number, state = 'ACTIVE') =>
  h.db.pool.query(
    `INSERT INTO clusters (id, tenant_id, name, key_encrypted, state, last_seen_at)
     SELECT 'cls_' || lpad(i::text, 20, '0') || substr(md5($1), 1, 6), $1, 'edge-' || i, 'v1.x.y.z', $3::"LifecycleState", CASE WHEN i % 2 = 0 THEN now() - interval '1 hour' END
       FROM generate_series(1, $2::int) i`,
    [tenantId, n, state],
  );

test('the edge clusters come a page at a time, every one once, newest first, on both surfaces', async () => {
  await addClusters(mine.tenant.tenantId, 105);
  await addClusters(theirs.tenant.tenantId, 30);
  // A DELETED cluster is not a plane.
  const gone = newId('cls');
  await h.db.pool.query(`INSERT INTO clusters (id, tenant_id, name, key_encrypted, state) VALUES ($1, $2, 'gone', 'v1.x.y.z', 'DELETED')`, [gone, mine.tenant.tenantId]);
  const expected = (await h.db.pool.query<{ id: string }>(`SELECT id FROM clusters WHERE tenant_id = $1 AND state <> 'DELETED' ORDER BY id DESC`, [mine.tenant.tenantId])).rows.map((r) => r.id);
  expect(expected).toHaveLength(106);

  // The first page: the shared planes, then `limit` (default 20) clusters.
  const first = (await call(client, 'list_planes')).body;
  expect(first.planes.map((p: { id: string }) => p.id)).toEqual(['control', 'delivery', ...expected.slice(0, 20)]);
  expect([first.has_more, typeof first.next_cursor]).toEqual([true, 'string']);

  for (const surface of ['tool', 'rest'] as const) {
    const seen: string[] = [];
    const pages: boolean[] = [];
    let cursor: string | null = null;
    do {
      const q: Record<string, unknown> = { limit: 30, ...(cursor ? { cursor } : {}) };
      const page: any =
        surface === 'tool' ? (await call(client, 'list_planes', q)).body : (await h.http('GET', `/v1/mcp/planes?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]))}`, { headers })).body;
      // The shared planes lead the first page only.
      expect(page.planes.filter((p: { kind: string }) => p.kind !== 'edge_cluster').map((p: { id: string }) => p.id)).toEqual(cursor ? [] : ['control', 'delivery']);
      seen.push(...page.planes.filter((p: { kind: string }) => p.kind === 'edge_cluster').map((p: { id: string }) => p.id));
      expect(page.has_more).toBe(page.next_cursor !== null);
      pages.push(page.has_more);
      cursor = page.next_cursor;
    } while (cursor && pages.length < 10);
    expect([surface, seen]).toEqual([surface, expected]);
    expect(pages).toEqual([true, true, true, false]);
  }
  expect((await call(client, 'list_planes', { limit: 100 })).body.planes.filter((p: { kind: string }) => p.kind === 'edge_cluster')).toHaveLength(100);

  // A cursor the list did not issue, or a limit out of range: 400 on both surfaces.
  for (const bad of ['nope', Buffer.from(newId('dlv')).toString('base64url'), newId('cls')]) {
    expect((await call(client, 'list_planes', { cursor: bad })).body).toMatchObject({ status: 400, errors: [{ field: 'cursor' }] });
    expect((await h.http('GET', `/v1/mcp/planes?cursor=${bad}`, { headers })).body).toMatchObject({ status: 400, errors: [{ field: 'cursor' }] });
  }
  expect((await h.http('GET', '/v1/mcp/planes?limit=101', { headers })).body).toMatchObject({ status: 400, errors: [{ field: 'limit' }] });
});

test("get_readiness shows the tenant's own backlog, counted up to a bound, and no queue depths", async () => {
  const pending = async (t: TenantData, n: number) => {
    const flow = await insertFlow(h.db.pool, { tenantId: t.tenant.tenantId, ingesterId: t.ingesterId, destinationId: t.destinationId });
    const tag = newId('evt').slice(4, 14);
    await h.db.pool.query(
      `INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id) SELECT 'evt_' || $4 || lpad(i::text, 12, '0'), $1, $2, 'x', 'validated', 'c' FROM generate_series(1, $3::int) i`,
      [t.tenant.tenantId, t.ingesterId, n, tag],
    );
    await h.db.pool.query(
      `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status)
       SELECT 'dlv_' || $5 || lpad(i::text, 12, '0'), $1, 'evt_' || $5 || lpad(i::text, 12, '0'), $2, $3, (ARRAY['pending', 'failed', 'replaying'])[1 + i % 3]::"DeliveryStatus" FROM generate_series(1, $4::int) i`,
      [t.tenant.tenantId, flow, t.destinationId, n, tag],
    );
  };
  // Theirs count for them only; exhausted and delivered ones are not open.
  await pending(theirs, 50);
  expect((await call(client, 'get_readiness')).body).toEqual({
    status: 'ready',
    domains: {
      database: { ok: true },
      redis: { ok: true },
      queues: { ok: true },
      deliveries: { ok: true, open: 0, open_capped: false },
      evidence: expect.objectContaining({ ok: true }),
    },
  });
  await pending(mine, 7);
  expect((await call(client, 'get_readiness')).body.domains.deliveries).toEqual({ ok: true, open: 7, open_capped: false });
  await pending(mine, OPEN_DELIVERIES_CAP);
  expect((await call(client, 'get_readiness')).body.domains.deliveries).toEqual({ ok: true, open: OPEN_DELIVERIES_CAP, open_capped: true });
  // The platform's queue depths are nowhere in the answer, nor in what the tool says it shows.
  const { tools } = await client.listTools();
  expect(tools.find((x) => x.name === 'get_readiness')!.description).toMatch(/not shown/);
  expect(JSON.stringify((await call(client, 'get_readiness')).body)).not.toMatch(/depths|waiting|delayed/);
});
