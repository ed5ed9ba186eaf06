// Deliveries that appear after a delete closed its destination's or flow's open ones (a
// router routing from a stale flow cache inserts plain `pending` rows), or that a delete
// left beyond its inline limit, are closed by the deliverer's janitor exactly as the
// delete closes them, in batches that go on while they come back full; replay and retry
// lock the destination and flow rows before deciding, so a concurrent delete is not undone.
import { createPool } from '@hookline/db';
import { closeOpenDeliveries, closeOpenSql } from '@hookline/delivery';
import { waitFor } from '@hookline/testing';
import { createJanitor, runJanitor } from '../services/deliverer/src/close-deleted';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, setOwnerState, type Pipeline } from './api-fixtures';

jest.setTimeout(60_000);

const DAY_MS = 86_400_000;

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('janitor');
});
afterAll(async () => {
  await h.close();
});

interface Row {
  status: string;
  last_error: string | null;
  held: boolean;
  lease_owner: string | null;
  lease_until: Date | null;
  exhausted_at: Date | null;
}

const row = async (id: string): Promise<Row> =>
  (await h.db.pool.query('SELECT status::text AS status, last_error, held, lease_owner, lease_until, exhausted_at FROM deliveries WHERE id = $1', [id])).rows[0];
const eventStatus = async (id: string): Promise<string> => (await h.db.pool.query('SELECT status::text AS status FROM events WHERE id = $1', [id])).rows[0].status;

/** A delivery of `p` for a new event, inserted as the router would (plain INSERT). */
async function delivery(tenantId: string, p: Pipeline, status: string, opts: { held?: boolean; leasedBy?: string } = {}): Promise<{ id: string; eventId: string }> {
  const eventId = await insertEvent(h, tenantId, p.ingesterId);
  const id = await insertDelivery(h, tenantId, eventId, p, { status, attempts: status === 'pending' ? 0 : 2, at: new Date(Date.now() - 60_000) });
  if (opts.held) await h.db.pool.query('UPDATE deliveries SET held = true WHERE id = $1', [id]);
  if (opts.leasedBy) await h.db.pool.query(`UPDATE deliveries SET lease_owner = $2, lease_until = now() + interval '2 minutes' WHERE id = $1`, [id, opts.leasedBy]);
  return { id, eventId };
}


describe('the janitor', () => {
  it('closes open deliveries created after their destination or flow was deleted, as the delete does; others are untouched', async () => {
    const t = await h.tenant();
    const goneDst = await createPipeline(h, t.tenantId, t.apiKey, 'gone-dst');
    const goneFlow = await createPipeline(h, t.tenantId, t.apiKey, 'gone-flow');
    const offDst = await createPipeline(h, t.tenantId, t.apiKey, 'off-dst');
    const offFlow = await createPipeline(h, t.tenantId, t.apiKey, 'off-flow');
    const live = await createPipeline(h, t.tenantId, t.apiKey, 'live');
    await setOwnerState(h, t, 'destinations', goneDst.destinationId, 'DELETED');
    await setOwnerState(h, t, 'delivery-flows', goneFlow.flowId, 'DELETED');
    await setOwnerState(h, t, 'destinations', offDst.destinationId, 'DISABLED');
    await setOwnerState(h, t, 'delivery-flows', offFlow.flowId, 'DISABLED');

    // A stale router (its cache still saw them ACTIVE) inserts after the deletes committed.
    const dstOpen = [await delivery(t.tenantId, goneDst, 'pending'), await delivery(t.tenantId, goneDst, 'failed'), await delivery(t.tenantId, goneDst, 'replaying'), await delivery(t.tenantId, goneDst, 'pending', { leasedBy: 'deliverer-x:1' })];
    const flowOpen = [await delivery(t.tenantId, goneFlow, 'pending'), await delivery(t.tenantId, goneFlow, 'failed')];
    const dstDelivered = await delivery(t.tenantId, goneDst, 'delivered');
    const untouched = [
      await delivery(t.tenantId, offDst, 'pending', { held: true }),
      await delivery(t.tenantId, offDst, 'failed', { held: true }),
      await delivery(t.tenantId, offFlow, 'pending'),
      await delivery(t.tenantId, live, 'pending'),
      await delivery(t.tenantId, live, 'failed'),
    ];
    const before = await Promise.all(untouched.map((d) => row(d.id)));

    expect(await runJanitor(h.db.pool)).toEqual({ destination: 4, flow: 2, held: 0, more: false });

    for (const [owner, list] of [['destination', dstOpen], ['flow', flowOpen]] as const) {
      for (const d of list) {
        const r = await row(d.id);
        expect(r).toMatchObject({ status: 'exhausted', held: false, lease_owner: null, lease_until: null });
        expect(r.exhausted_at).toBeInstanceOf(Date);
        expect(r.last_error).toMatch(owner === 'destination' ? /^destination_deleted: the destination was deleted/ : /^flow_deleted: the delivery flow was deleted/);
        expect(await eventStatus(d.eventId)).toBe('dlq_queued');
      }
    }
    expect((await row(dstDelivered.id)).status).toBe('delivered');
    expect(await Promise.all(untouched.map((d) => row(d.id)))).toEqual(before);
    for (const d of untouched) expect(await eventStatus(d.eventId)).toBe('filtered');

    // Nothing left: the next run closes nothing.
    expect(await runJanitor(h.db.pool)).toEqual({ destination: 0, flow: 0, held: 0, more: false });
  });

  it('closes a bounded batch at a time, and only one replica runs at a time', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'batch');
    await setOwnerState(h, t, 'destinations', p.destinationId, 'DELETED');
    const ds = [await delivery(t.tenantId, p, 'pending'), await delivery(t.tenantId, p, 'pending'), await delivery(t.tenantId, p, 'failed')];

    // Another replica's run holds the janitor's lock.
    const other = await h.db.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':' || 'hookline-deliverer-janitor'))`);
      expect(await runJanitor(h.db.pool, { batchSize: 2, maxBatches: 1 })).toBeNull();
    } finally {
      await other.query('ROLLBACK');
      other.release();
    }

    expect(await runJanitor(h.db.pool, { batchSize: 2, maxBatches: 1 })).toEqual({ destination: 2, flow: 0, held: 0, more: true });
    // In id order: the highest id is left for the next run.
    const ids = ds.map((d) => d.id).sort();
    expect(await Promise.all(ids.map(async (id) => (await row(id)).status === 'exhausted'))).toEqual([true, true, false]);
    expect(await runJanitor(h.db.pool, { batchSize: 2, maxBatches: 1 })).toEqual({ destination: 1, flow: 0, held: 0, more: false });
    for (const id of ids) expect((await row(id)).status).toBe('exhausted');
  });

  it('counts a kind as unfinished when another replica takes the lock between batches, so the next run is a full pass', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'handoff');
    await setOwnerState(h, t, 'destinations', p.destinationId, 'DELETED');
    const ds = [await delivery(t.tenantId, p, 'pending'), await delivery(t.tenantId, p, 'pending'), await delivery(t.tenantId, p, 'failed')];
    // From the janitor's second transaction on, another replica holds the lock (a session lock
    // taken just before that transaction starts): the first batch closes 2 (full), then the
    // destinations' second batch and the flows' pass find the lock taken.
    const other = await h.db.pool.connect();
    let connects = 0;
    const pool = Object.create(h.db.pool, {
      connect: {
        value: async () => {
          if (++connects === 2) await other.query(`SELECT pg_advisory_lock(hashtext(current_schema() || ':' || 'hookline-deliverer-janitor'))`);
          return h.db.pool.connect();
        },
      },
    });
    try {
      expect(await runJanitor(pool, { batchSize: 2, maxBatches: 5 })).toEqual({ destination: 2, flow: 0, held: 0, more: true });
    } finally {
      await other.query(`SELECT pg_advisory_unlock_all()`);
      other.release();
    }
    expect(await runJanitor(h.db.pool, { batchSize: 2, maxBatches: 5 })).toEqual({ destination: 1, flow: 0, held: 0, more: false });
    for (const d of ds) expect((await row(d.id)).status).toBe('exhausted');
  });

  it('runs full passes until one closes less than a batch, then looks only at owners deleted recently', async () => {
    const t = await h.tenant();
    const old = await createPipeline(h, t.tenantId, t.apiKey, 'old');
    await setOwnerState(h, t, 'destinations', old.destinationId, 'DELETED');
    // Deleted an hour ago (before the janitor existed, say), with open deliveries left.
    await h.db.pool.query(`UPDATE destinations SET updated_at = now() - interval '1 hour' WHERE id = $1`, [old.destinationId]);
    const left = [await delivery(t.tenantId, old, 'pending'), await delivery(t.tenantId, old, 'failed'), await delivery(t.tenantId, old, 'pending')];
    const run = createJanitor(h.db.pool, { heldRetentionMs: DAY_MS, batchSize: 2, maxBatches: 1 });
    // Full passes: 2 (a whole batch: still full), then 1 (less than a batch: done).
    expect(await run()).toEqual({ destination: 2, flow: 0, held: 0, more: true });
    expect(await run()).toEqual({ destination: 1, flow: 0, held: 0, more: false });
    for (const d of left) expect((await row(d.id)).status).toBe('exhausted');
    // From now on only recent deletes: a late row of the old one stays, a recent one's is closed.
    const late = await delivery(t.tenantId, old, 'pending');
    const recent = await createPipeline(h, t.tenantId, t.apiKey, 'recent');
    await setOwnerState(h, t, 'destinations', recent.destinationId, 'DELETED');
    const fresh = await delivery(t.tenantId, recent, 'pending');
    expect(await run()).toEqual({ destination: 1, flow: 0, held: 0, more: false });
    expect([(await row(late.id)).status, (await row(fresh.id)).status]).toEqual(['pending', 'exhausted']);
    await h.db.pool.query(`UPDATE deliveries SET status = 'exhausted' WHERE id = $1`, [late.id]);
  });

  it('keeps closing batches of a kind within one run while they come back full, up to maxBatches', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'loop');
    const f = await createPipeline(h, t.tenantId, t.apiKey, 'loop-flow');
    await setOwnerState(h, t, 'destinations', p.destinationId, 'DELETED');
    await setOwnerState(h, t, 'delivery-flows', f.flowId, 'DELETED');
    const dst: { id: string }[] = [];
    for (let i = 0; i < 7; i++) dst.push(await delivery(t.tenantId, p, i % 2 ? 'failed' : 'pending'));
    const flow = [await delivery(t.tenantId, f, 'pending'), await delivery(t.tenantId, f, 'pending'), await delivery(t.tenantId, f, 'failed')];

    // Batches of 2, at most 3 a run: the destinations' 2 + 2 + 2 (the last still full: more
    // may be left), the flows' 2 + 1 (less than a batch: that kind is done).
    expect(await runJanitor(h.db.pool, { batchSize: 2, maxBatches: 3 })).toEqual({ destination: 6, flow: 3, held: 0, more: true });
    const ids = dst.map((d) => d.id).sort();
    expect(await Promise.all(ids.map(async (id) => (await row(id)).status))).toEqual([...Array(6).fill('exhausted'), 'pending']);
    for (const d of flow) expect((await row(d.id)).status).toBe('exhausted');
    expect(await runJanitor(h.db.pool, { batchSize: 2, maxBatches: 3 })).toEqual({ destination: 1, flow: 0, held: 0, more: false });
    for (const id of ids) expect(await row(id)).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^destination_deleted: /) });
  });

  it('makes the run after one that still closed a full batch a full pass, so a backlog outliving JANITOR_RECENT_MS is not stranded', async () => {
    const t = await h.tenant();
    // A janitor past its first full pass (nothing left anywhere): it looks at recent deletes only.
    const run = createJanitor(h.db.pool, { heldRetentionMs: DAY_MS, batchSize: 2, maxBatches: 1 });
    expect(await run()).toEqual({ destination: 0, flow: 0, held: 0, more: false });

    // A delete leaves a backlog larger than one run closes (a delete beyond its inline limit).
    const big = await createPipeline(h, t.tenantId, t.apiKey, 'backlog');
    await setOwnerState(h, t, 'destinations', big.destinationId, 'DELETED');
    const backlog: { id: string }[] = [];
    for (let i = 0; i < 5; i++) backlog.push(await delivery(t.tenantId, big, 'pending'));
    expect(await run()).toEqual({ destination: 2, flow: 0, held: 0, more: true });

    // Its delete is no longer recent (the backlog took longer than JANITOR_RECENT_MS): the
    // next runs are full passes, until one closes less than a batch.
    await h.db.pool.query(`UPDATE destinations SET updated_at = now() - interval '1 hour' WHERE id = $1`, [big.destinationId]);
    expect(await run()).toEqual({ destination: 2, flow: 0, held: 0, more: true });
    expect(await run()).toEqual({ destination: 1, flow: 0, held: 0, more: false });
    for (const d of backlog) expect((await row(d.id)).status).toBe('exhausted');

    // Then recent deletes only again: a late row of that old delete stays open.
    const late = await delivery(t.tenantId, big, 'pending');
    expect(await run()).toEqual({ destination: 0, flow: 0, held: 0, more: false });
    expect((await row(late.id)).status).toBe('pending');
    await h.db.pool.query(`UPDATE deliveries SET status = 'exhausted' WHERE id = $1`, [late.id]);
  });

  it("plans index lookups on the deliverer's connections, never a scan of deliveries", async () => {
    // Another tenant's history, mostly delivered, with an open backlog (an outage: one in
    // five failed), and DELETED destinations and flows with a few open deliveries.
    const t = await h.tenant();
    const bulk = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'plan');
    const q = await createPipeline(h, bulk.tenantId, bulk.apiKey, 'bulk');
    await h.db.pool.query(
      `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id, received_at)
       SELECT 'evt_plan' || lpad(i::text, 8, '0'), $1, $2, 'delivered', 'c', now() FROM generate_series(1, 30000) i`,
      [bulk.tenantId, q.ingesterId],
    );
    await h.db.pool.query(
      `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status)
       SELECT 'dlv_plan' || lpad(i::text, 8, '0'), $1, 'evt_plan' || lpad(i::text, 8, '0'), $2, $3, (CASE WHEN i % 5 = 0 THEN 'failed' ELSE 'delivered' END)::"DeliveryStatus" FROM generate_series(1, 30000) i`,
      [bulk.tenantId, q.flowId, q.destinationId],
    );
    const f = await createPipeline(h, t.tenantId, t.apiKey, 'plan-flow');
    await setOwnerState(h, t, 'destinations', p.destinationId, 'DELETED');
    await setOwnerState(h, t, 'delivery-flows', f.flowId, 'DELETED');
    await delivery(t.tenantId, p, 'pending');
    await delivery(t.tenantId, f, 'pending');
    await h.db.pool.query('ANALYZE');

    const pipeline = createPool(h.db.url, 1, { indexPlans: true });
    try {
      const explain = async (sql: string): Promise<string> =>
        (await pipeline.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, ['x', 1000, null])).rows.map((r) => r['QUERY PLAN']).join('\n');
      // The deliveries to close are read through an index of open rows only: the open
      // deliveries' partial index or (tenant_id, status, id) with the open statuses; never
      // the delivered history (a seq scan, or the primary key walked in id order to skip
      // the sort, which the planner chose for ORDER BY d.id LIMIT with this backlog).
      const readsOpenRowsOnly = (plan: string): void => {
        expect(plan).not.toMatch(/Seq Scan on deliveries\b/);
        const indexes = [...plan.matchAll(/(?:Index (?:Only )?Scan using (\w+) on deliveries d_1\b|Bitmap Index Scan on (\w+))/g)].map((m) => m[1] ?? m[2]);
        expect(indexes.length).toBeGreaterThan(0);
        for (const index of indexes) expect(['deliveries_destination_id_next_attempt_at_open_idx', 'deliveries_tenant_id_status_id_idx']).toContain(index);
      };
      const dst = await explain(closeOpenSql('deleted', 'destination'));
      readsOpenRowsOnly(dst);
      // DELETED destinations first, then one probe each.
      expect(dst).toMatch(/Index Cond: \(destination_id = ANY \(\$\d\)\)/);
      const flow = await explain(closeOpenSql('deleted', 'flow'));
      readsOpenRowsOnly(flow);
      // Flows: by (tenant_id, status, id) for the tenants with a DELETED flow, or (as here,
      // few tenants in the statistics) the open partial index whole: open rows either way.
    } finally {
      await pipeline.end();
    }
    await runJanitor(h.db.pool);
  });
});

/** The pid of a backend waiting for a lock that `holder` holds, once there is one. */
async function waiterOn(holderPid: number): Promise<number> {
  return waitFor(
    async () => {
      const { rows } = await h.db.pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid]);
      return rows[0]?.pid;
    },
    { timeoutMs: 5_000, what: 'a backend waiting for the delete' },
  );
}

describe('replay and retry racing a delete', () => {
  it('a replay waits for a delete in progress of its destination, then answers 409 destination_not_active', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'replay-race');
    const d = await delivery(t.tenantId, p, 'exhausted');

    // A delete in progress (disabled and deleted in one transaction, for the race): the
    // destination row is locked; its close skips the delivery, already exhausted.
    const del = await h.db.pool.connect();
    let settled = false;
    try {
      await del.query('BEGIN');
      const pid = (await del.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await del.query(`UPDATE destinations SET state = 'DELETED', updated_at = now() WHERE id = $1`, [p.destinationId]);
      expect(await closeOpenDeliveries(del, 'destination', t.tenantId, p.destinationId)).toBe(0);

      const replay = h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${d.id}/replay`, { key: t.apiKey }).finally(() => (settled = true));
      await waiterOn(pid);
      expect(settled).toBe(false);
      await del.query('COMMIT');
      const res = await replay;
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ reason_code: 'destination_not_active' });
    } finally {
      await del.query('ROLLBACK').catch(() => undefined);
      del.release();
    }
    expect((await row(d.id)).status).toBe('exhausted');
  });

  it('a retry waits for a delete in progress of its flow, then answers 409 flow_not_active and leaves the delivery closed', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'retry-race');
    const d = await delivery(t.tenantId, p, 'failed');

    const del = await h.db.pool.connect();
    try {
      await del.query('BEGIN');
      const pid = (await del.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await del.query(`UPDATE delivery_flows SET state = 'DELETED', updated_at = now() WHERE id = $1`, [p.flowId]);
      expect(await closeOpenDeliveries(del, 'flow', t.tenantId, p.flowId)).toBe(1);

      const retry = h.call('POST', `/v1/tenants/${t.tenantId}/events/${d.eventId}/retry`, { key: t.apiKey });
      await waiterOn(pid);
      await del.query('COMMIT');
      const res = await retry;
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ reason_code: 'flow_not_active' });
    } finally {
      await del.query('ROLLBACK').catch(() => undefined);
      del.release();
    }
    expect(await row(d.id)).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^flow_deleted: /) });
    expect(await eventStatus(d.eventId)).toBe('dlq_queued');
  });
});
