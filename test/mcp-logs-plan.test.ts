// get_logs and GET /v1/mcp/logs/{id} read a page per source, not a resource's whole history:
// each source of the union takes its own newest entries (its level filter first) and the
// union the newest of those. An ingester's rejections (anyone can add to them by posting
// unsigned requests) are read newest first by id (ingest_rejections_ingester_id_id_idx, or the
// primary key when one ingester has most of them): a page of rows however many the ingester
// has; its audit entries newest first through audit_logs (tenant_id, resource_id,
// created_at), not the tenant's whole audit log. The answer is the one the whole history gives.
import { newId } from '@hookline/db';
import { createTestDatabase, seedTenant, type TestDatabase } from '@hookline/testing';
import type { McpDeps } from '../services/api/src/mcp/mcp-deps';
import { logsFor } from '../services/api/src/mcp/mcp-logs';
import { insertIngester } from './router-fixtures';
import { explainAnalyze, planReads, type PlanNode } from './support/plan-reads';

let db: TestDatabase;
let tenantId: string;
let busy: string;
let other: string;
const N = 20_000;

beforeAll(async () => {
  db = await createTestDatabase('mcplogsplan');
  tenantId = (await seedTenant(db.pool)).tenantId;
  busy = await insertIngester(db.pool, tenantId);
  other = await insertIngester(db.pool, tenantId);
  const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
  // The busy ingester's rejections, one a second over the last N seconds (ids in time order),
  // and another ingester's, one in a hundred, interleaved.
  await q(
    `INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code, detail, created_at)
     SELECT 'rej_' || lpad(i::text, 26, '0'), $1, CASE WHEN i % 100 = 0 THEN $3 ELSE $2 END, 'signature_mismatch', 'bad', now() - (${N} - i) * interval '1 second'
       FROM generate_series(1, ${N}) i`,
    [tenantId, busy, other],
  );
  // Its audit entries, a few among the rejections (the newest two of them newer than every
  // rejection), of every level; and many audit rows of the tenant's other resources.
  const audits: [number, string][] = [[-5, 'success:200'], [-3, 'client_error:403'], [40, 'success:201'], [41, 'server_error:500'], [300, 'client_error:409'], [301, 'success:200']];
  for (const [agoS, outcome] of audits) {
    await q(`INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id, created_at) VALUES ($1, $2, 'api_key:x', 'ingesters.update', $3, '{}', $4, 'req_x', now() - $5::int * interval '1 second')`, [
      newId('aud'), tenantId, busy, outcome, agoS,
    ]);
  }
  await q(
    `INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id)
     SELECT 'aud_' || lpad(i::text, 26, '0'), $1, 'api_key:x', 'destinations.update', 'dst_' || lpad(i::text, 26, '0'), '{}', 'success:200', 'req_x' FROM generate_series(1, ${N}) i`,
    [tenantId],
  );
  await q('ANALYZE');
});

afterAll(async () => {
  await db.drop();
});

/** logsFor on a pool that also runs its entries statement under EXPLAIN ANALYZE. */
async function logsWithPlan(id: string, opts: { level?: string; limit?: number }): Promise<{ entries: { at: string; level: string; source: string; message: string }[]; plan: PlanNode }> {
  let plan: PlanNode | undefined;
  const pool = {
    query: async (sql: string, params: unknown[]) => {
      if (/ORDER BY at DESC LIMIT \$4/.test(sql)) plan = await explainAnalyze(db.pool, sql, params);
      return db.pool.query(sql, params);
    },
  };
  const { entries } = await logsFor({ pool } as unknown as McpDeps, tenantId, id, opts);
  if (!plan) throw new Error('no entries statement was sent');
  return { entries: entries.map(({ at, level, source, message }) => ({ at, level, source, message })), plan };
}

/** The same answer from the whole history: every entry of both sources, sorted, filtered, cut. */
async function fromEverything(id: string, level: string | null, limit: number) {
  const { rows } = await db.pool.query<{ at: Date; level: string; source: string; message: string }>(
    `SELECT * FROM (
       SELECT created_at AS at, 'warn' AS level, 'ingest_rejection' AS source, 'rejected: ' || reason_code AS message FROM ingest_rejections WHERE tenant_id = $2 AND ingester_id = $1
       UNION ALL
       SELECT created_at, CASE WHEN outcome LIKE 'success%' THEN 'info' WHEN outcome LIKE 'client_error%' THEN 'warn' ELSE 'error' END, 'audit', action || ' by ' || actor || ': ' || outcome FROM audit_logs WHERE tenant_id = $2 AND resource_id = $1
     ) l WHERE ($3::text IS NULL OR level = $3) ORDER BY at DESC LIMIT $4`,
    [id, tenantId, level, limit],
  );
  return rows.map((r) => ({ ...r, at: r.at.toISOString() }));
}

test("an ingester's logs read a page of its rejections, however many it has, and answer what its whole history gives", async () => {
  for (const [level, limit] of [[undefined, 20], [undefined, 5], ['warn', 20], ['info', 3], ['error', 20], [undefined, 100]] as const) {
    const { entries, plan } = await logsWithPlan(busy, { ...(level ? { level } : {}), limit });
    expect([level, limit, entries]).toEqual([level, limit, await fromEverything(busy, level ?? null, limit)]);
    const reads = planReads(plan, ['ingest_rejections', 'audit_logs']);
    expect([level, limit, reads.seqScans]).toEqual([level, limit, []]);
    // Its audit entries through audit_logs (tenant_id, resource_id, created_at): its own six, not the tenant's 20,000.
    expect([level, limit, (reads.reads['audit_logs'] ?? 0) <= 6]).toEqual([level, limit, true]);
    // About a page (the planner may walk the newest rejections of every ingester, the other's
    // filtered away, or the ingester's own index), not the 19,800 the ingester has.
    expect([level, limit, reads.reads['ingest_rejections'] ?? 0]).toEqual([level, limit, expect.any(Number)]);
    expect([level, limit, (reads.reads['ingest_rejections'] ?? 0) <= 2 * (limit + 1)]).toEqual([level, limit, true]);
  }
  // The audit entries newer than every rejection come first; info finds audit rows only, older than a page of rejections.
  const { entries } = await logsWithPlan(busy, { limit: 3 });
  expect(entries.map((e) => e.source)).toEqual(['audit', 'audit', 'ingest_rejection']);
  expect((await logsWithPlan(busy, { level: 'info', limit: 3 })).entries.map((e) => e.message)).toEqual([
    'ingesters.update by api_key:x: success:200',
    'ingesters.update by api_key:x: success:201',
    'ingesters.update by api_key:x: success:200',
  ]);
  // The other ingester's rejections are its own, read a page at a time too.
  const theirs = await logsWithPlan(other, { limit: 100 });
  expect(theirs.entries).toEqual(await fromEverything(other, null, 100));
  expect(planReads(theirs.plan, ['ingest_rejections']).reads['ingest_rejections']! <= 2 * 101).toBe(true);
});

test("the logs of a resource with audit entries only (the tenant's own id, a destination) read its entries, not the tenant's audit log", async () => {
  for (const id of [tenantId, 'dst_' + '1'.padStart(26, '0')]) {
    const { entries, plan } = await logsWithPlan(id, { limit: 20 });
    expect([id, entries.length]).toEqual([id, id === tenantId ? 0 : 1]);
    const reads = planReads(plan, ['audit_logs']);
    expect([id, reads.seqScans, (reads.reads['audit_logs'] ?? 0) <= 2]).toEqual([id, [], true]);
  }
});
