// Sealing reads the (merkle_root_id, issued_at) index in order. Finding the next window to
// seal stops at the first due receipt: an index scan, which marks the dead entries sealing
// leaves behind, not a bitmap scan over every unsealed-looking entry of the range (what the
// GROUP BY it replaced did, 38 ms per pass in the benchmark). A root's chunk of receipts
// reads its window's range, not the primary key from the table's first receipt (199 ms per
// chunk in the benchmark).
import { OLDEST_DUE_SQL, SEAL_SELECT_SQL } from '@hookline/evidence';
import { createTestDatabase, type TestDatabase } from '@hookline/testing';

let db: TestDatabase;
const WINDOW_MS = 60_000;

beforeAll(async () => {
  db = await createTestDatabase('duepl');
  // 20,000 receipts: 15,000 over the last few hours, sealed (2,500 per root); then 5,000
  // unsealed, issued in the first 50 s of the minute that began ten minutes ago.
  await db.pool.query(
    `INSERT INTO evidence_receipts (id, tenant_id, attempt_id, delivery_id, event_id, destination_id, attempt_number, outcome,
       started_at, completed_at, duration_ms, leaf_hash, signature, key_id, issued_at, merkle_root_id, leaf_index)
     SELECT 'rcp_' || lpad(i::text, 8, '0'), 'ten_a', 'att_' || i, 'dlv_' || i, 'evt_' || i, 'dst_a', 1, 'succeeded',
       now(), now(), 1, 'ab', 'sig', 'k',
       CASE WHEN i <= 15000 THEN now() - interval '11 minutes' - (15000 - i) * interval '1 second'
            ELSE date_trunc('minute', now()) - interval '10 minutes' + (i - 15000) * interval '10 ms' END,
       CASE WHEN i <= 15000 THEN 'mrk_' || (i / 2500) END, CASE WHEN i <= 15000 THEN i % 2500 END
     FROM generate_series(1, 20000) i`,
  );
  await db.pool.query('ANALYZE evidence_receipts');
});

afterAll(async () => {
  await db?.drop();
});

async function plan(sql: string, params: unknown[], settings: string[] = []): Promise<string> {
  const client = await db.pool.connect();
  try {
    for (const s of settings) await client.query(`SET ${s}`);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    client.release(true);
  }
}

test('the next due window is an ordered index scan that stops at its first row', async () => {
  const end = new Date(Date.now() - 60_000);
  const text = await plan(OLDEST_DUE_SQL, [WINDOW_MS, end]);
  expect(text).toMatch(/Index (Only )?Scan using evidence_receipts_merkle_root_id_issued_at_idx/);
  expect(text).not.toMatch(/Bitmap|Sort|Seq Scan/);
  // The GROUP BY it replaced: a bitmap scan of the whole range (so this test tells them apart).
  const before = await plan(
    `SELECT tenant_id, floor(extract(epoch FROM issued_at) * 1000 / $1)::bigint AS w FROM evidence_receipts
      WHERE merkle_root_id IS NULL AND issued_at < $2 GROUP BY 1, 2 ORDER BY 2, 1`,
    [WINDOW_MS, end],
  );
  expect(before).toMatch(/Bitmap|Seq Scan/);
  // And it finds the oldest unsealed receipt's window.
  const { rows } = await db.pool.query<{ tenant_id: string; w: string; since: string }>(OLDEST_DUE_SQL, [WINDOW_MS, end]);
  const { rows: oldest } = await db.pool.query<{ w: string; since: string }>(
    `SELECT floor(extract(epoch FROM min(issued_at)) * 1000 / $1)::bigint AS w, min(issued_at)::text AS since FROM evidence_receipts WHERE merkle_root_id IS NULL`,
    [WINDOW_MS],
  );
  expect(rows).toEqual([{ tenant_id: 'ten_a', w: oldest[0]!.w, since: oldest[0]!.since }]);
});

test("a root's chunk reads its window's range of the index, not every receipt sealed before it", async () => {
  const { rows: w } = await db.pool.query<{ start: Date }>(`SELECT date_trunc('minute', min(issued_at)) AS start FROM evidence_receipts WHERE merkle_root_id IS NULL`);
  const start = w[0]!.start;
  const params = ['ten_a', start, new Date(start.getTime() + WINDOW_MS), 2500];
  const text = await plan(SEAL_SELECT_SQL, params);
  expect(text).toMatch(/Index Scan (using|on) evidence_receipts_merkle_root_id_issued_at_idx/);
  expect(text).not.toMatch(/evidence_receipts_pkey|Seq Scan/);
  // Where the planner reads rows already in order (it did in the benchmark, from statistics
  // that said most rows qualify), this order comes from the window's range of the index; id
  // order (before) only from the primary key, which starts at the table's first receipt.
  const ordered = ['enable_sort = off', 'enable_bitmapscan = off'];
  expect(await plan(SEAL_SELECT_SQL, params, ordered)).toMatch(/Index Scan using evidence_receipts_merkle_root_id_issued_at_idx/);
  const before = await plan(SEAL_SELECT_SQL.replace('ORDER BY merkle_root_id, issued_at, id', 'ORDER BY id'), params, ordered);
  expect(before).toMatch(/Index Scan using evidence_receipts_pkey/);
  const { rows } = await db.pool.query<{ id: string }>(SEAL_SELECT_SQL, params);
  expect(rows).toHaveLength(2500);
  expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort());
});
