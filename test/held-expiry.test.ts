// Held deliveries expire: the deliverer's janitor moves deliveries held (open deliveries of
// a DISABLED destination) for more than HELD_RETENTION_MS to the DLQ exactly as a delete's
// close does (last_error held_expired: …), a bounded batch at a time, oldest first,
// skipping locked rows. The retention counts from held_since (migration
// 20261125000000_held_expiry), when the delivery was last held, never from its created_at:
// an old delivery held a minute ago (a destination just disabled, a retry from the DLQ into
// a destination still DISABLED) is not expired. From the DLQ a retry follows the usual
// rules: held again while the destination is DISABLED, sent once it is enabled.
import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { createPool, migrate, parseDatabaseUrl } from '@hookline/db';
import { HELD_EXPIRED_ERROR } from '@hookline/delivery';
import { createLogger } from '@hookline/logger';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import type { AppContext } from '../services/api/src/context';
import { changeState } from '../services/api/src/lifecycle/lifecycle';
import { retryEvent } from '../services/api/src/replay/replay.service';
import { runJanitor } from '../services/deliverer/src/close-deleted';
import { expireHeldDeliveries } from '../services/deliverer/src/expire-held';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

const DAY_MS = 86_400_000;
const RETENTION_MS = 7 * DAY_MS;

let h: Harness;
let rx: Receiver;
let app: AppContext;
const logger = createLogger('held-expiry-test', 'error');

beforeAll(async () => {
  h = await createHarness('heldexpiry');
  rx = await startReceiver();
  app = { pool: h.db.pool, redis: h.redis, producer: h.deps.producer, config: { QUEUE_PREFIX: h.prefix, pools: new Map(), DELETE_CLOSE_INLINE_LIMIT: 10_000 }, logger } as unknown as AppContext;
  h.startWorker();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

const queued = async (): Promise<string[]> => (await h.deps.producer.queue('deliver').getJobs(['waiting', 'delayed', 'prioritized', 'active'])).flatMap((j) => (j.data as { deliveryIds: string[] }).deliveryIds);
/** Held `days` ago (held_since), as if the destination had been disabled then. */
const heldAgo = (ids: string[], days: number) => h.db.pool.query(`UPDATE deliveries SET held_since = now() - $2::int * interval '1 day' WHERE id = ANY($1::text[])`, [ids, days]);
/** Created `days` ago: for the expiry, it makes no difference. */
const createdAgo = (ids: string[], days: number) => h.db.pool.query(`UPDATE deliveries SET created_at = now() - $2::int * interval '1 day' WHERE id = ANY($1::text[])`, [ids, days]);
const expire = (opts: { batchSize?: number; maxBatches?: number } = {}) => runJanitor(h.db.pool, { heldRetentionMs: RETENTION_MS, ...opts });
const retryDeps = () => ({ pool: h.db.pool, producer: h.deps.producer, logger, pools: new Map<string, string>() });
const recent = (d: Date | null): boolean => d !== null && Math.abs(d.getTime() - Date.now()) < 60_000;

/** A DISABLED destination (to the receiver) with `n` open deliveries, all held (since the disable). */
async function heldDeliveries(n: number): Promise<{ dst: { id: string }; ds: { deliveryId: string; eventId: string }[] }> {
  const dst = await h.destination(rx.url);
  const ds = [];
  for (let i = 0; i < n; i++) ds.push(await h.delivery(dst.id));
  await changeState(app, 'destination', h.tenantId, dst.id, 'disable');
  for (const d of ds) {
    const r = await h.row(d.deliveryId);
    expect(r.held).toBe(true);
    expect(recent(r.held_since)).toBe(true);
  }
  return { dst, ds };
}

test('moves deliveries held longer than the retention to the DLQ as a delete does; recently held, unheld and DELETED destinations\' ones are left', async () => {
  const { ds: [pending, failed, replaying, young] } = await heldDeliveries(4);
  await h.db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 2, last_error = 'HTTP 503', lease_owner = 'deliverer-x:1', lease_until = now() + interval '2 minutes' WHERE id = $1`, [failed!.deliveryId]);
  await h.db.pool.query(`UPDATE deliveries SET status = 'replaying' WHERE id = $1`, [replaying!.deliveryId]);
  await heldAgo([pending!.deliveryId, failed!.deliveryId, replaying!.deliveryId], 8);
  // Held 6 days ago, created 30 days ago: not expired.
  await heldAgo([young!.deliveryId], 6);
  await createdAgo([young!.deliveryId], 30);
  // An ACTIVE destination's old open delivery: not held, never expired.
  const active = await h.delivery((await h.destination(rx.url)).id);
  await createdAgo([active.deliveryId], 30);
  // A DELETED destination's old held delivery (as a delete beyond its inline limit leaves it):
  // the expiry leaves it to the janitor's destination pass.
  const gone = await heldDeliveries(1);
  await h.db.pool.query(`UPDATE destinations SET state = 'DELETED' WHERE id = $1`, [gone.dst.id]);
  await heldAgo([gone.ds[0]!.deliveryId], 30);
  // The expiry alone (rolled back): the three long-held ones of the DISABLED destination only.
  const client = await h.db.pool.connect();
  try {
    await client.query('BEGIN');
    expect(await expireHeldDeliveries(client, 100, RETENTION_MS)).toBe(3);
    expect((await client.query('SELECT held FROM deliveries WHERE id = $1', [gone.ds[0]!.deliveryId])).rows[0]).toEqual({ held: true });
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }

  // The run: the DELETED destination's is closed as destination_deleted, the three expire.
  expect(await expire()).toEqual({ destination: 1, flow: 0, held: 3, more: false });
  expect(await h.row(gone.ds[0]!.deliveryId)).toMatchObject({ stored_status: 'exhausted', held: false, held_since: null, last_error: expect.stringMatching(/^destination_deleted: /) });
  for (const d of [pending, failed, replaying]) {
    const r = await h.row(d!.deliveryId);
    expect(r).toMatchObject({ stored_status: 'exhausted', held: false, held_since: null, lease_owner: null, lease_until: null, last_error: HELD_EXPIRED_ERROR });
    expect(r.exhausted_at).toBeInstanceOf(Date);
    expect((await h.event(d!.eventId)).status).toBe('dlq_queued');
    expect(r.exhausted_at!.getTime()).toBeGreaterThan(Date.now() - 60_000);
  }
  expect((await h.row(failed!.deliveryId)).attempt_count).toBe(2);
  expect(await h.row(young!.deliveryId)).toMatchObject({ stored_status: 'pending', held: true, exhausted_at: null });
  expect((await h.event(young!.eventId)).status).toBe('filtered');
  expect(await h.row(active.deliveryId)).toMatchObject({ stored_status: 'pending', held: false });
  expect(await expire()).toMatchObject({ held: 0 });
});

test('expires a bounded batch at a time, longest held first (not oldest created), skipping rows another transaction holds', async () => {
  const { ds } = await heldDeliveries(3);
  const [a, b, c] = ds.map((d) => d.deliveryId) as [string, string, string];
  // Held in the order c, b, a; created the other way round (a the oldest).
  await heldAgo([a], 8);
  await heldAgo([b], 9);
  await heldAgo([c], 10);
  await createdAgo([a], 30);
  await createdAgo([b], 20);
  await createdAgo([c], 11);
  expect(await expire({ batchSize: 1, maxBatches: 1 })).toMatchObject({ held: 1 });
  expect([(await h.row(a)).stored_status, (await h.row(b)).stored_status, (await h.row(c)).stored_status]).toEqual(['pending', 'pending', 'exhausted']);

  // b (now the longest held) is locked by someone else: skipped, not waited for.
  const other = await h.db.pool.connect();
  try {
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE', [b]);
    expect(await expire({ batchSize: 1, maxBatches: 1 })).toMatchObject({ held: 0 });
    expect((await h.row(b)).stored_status).toBe('pending');
  } finally {
    await other.query('ROLLBACK');
    other.release();
  }
  // Both left, in batches of 1 within one run: it goes on while they come back full.
  expect(await expire({ batchSize: 1, maxBatches: 5 })).toMatchObject({ held: 2 });
  for (const id of [a, b]) expect(await h.row(id)).toMatchObject({ stored_status: 'exhausted', last_error: HELD_EXPIRED_ERROR });
});

test('a delivery created long ago is not expired when its destination is disabled now', async () => {
  // Open for 30 days (a long retry schedule), then the destination is disabled.
  const dst = await h.destination(rx.url);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 3, next_attempt_at = now() + interval '1 day' WHERE id = $1`, [deliveryId]);
  await createdAgo([deliveryId], 30);
  await changeState(app, 'destination', h.tenantId, dst.id, 'disable');
  expect(recent((await h.row(deliveryId)).held_since)).toBe(true);

  expect(await expire()).toMatchObject({ held: 0 });
  expect(await h.row(deliveryId)).toMatchObject({ stored_status: 'failed', held: true, exhausted_at: null, last_error: null });
  expect((await h.event(eventId)).status).toBe('filtered');
});

test('an expired delivery created long ago, retried while its destination is still DISABLED, survives the next janitor run', async () => {
  const { ds: [d] } = await heldDeliveries(1);
  await createdAgo([d!.deliveryId], 30);
  await heldAgo([d!.deliveryId], 8);
  // The janitor: to the DLQ.
  expect(await expire()).toMatchObject({ held: 1 });
  expect(await h.row(d!.deliveryId)).toMatchObject({ stored_status: 'exhausted', held: false, held_since: null });

  // The retry: held again, from now.
  expect(await retryEvent(retryDeps(), h.tenantId, d!.eventId)).toEqual([d!.deliveryId]);
  const retried = await h.row(d!.deliveryId);
  expect(retried).toMatchObject({ stored_status: 'replaying', held: true });
  expect(recent(retried.held_since)).toBe(true);

  // The janitor again: the retry holds, as it reported.
  expect(await expire()).toMatchObject({ held: 0 });
  expect(await h.row(d!.deliveryId)).toMatchObject({ stored_status: 'replaying', held: true });
  expect(await queued()).not.toContain(d!.deliveryId);
});

test('held rows without held_since (stored by an older replica during a rolling deploy) are stamped by the janitor, then expire a retention later', async () => {
  const { ds: [d] } = await heldDeliveries(1);
  await createdAgo([d!.deliveryId], 30);
  await h.db.pool.query('UPDATE deliveries SET held_since = NULL WHERE id = $1', [d!.deliveryId]);

  expect(await expire()).toMatchObject({ held: 0 });
  const stamped = await h.row(d!.deliveryId);
  expect(stamped).toMatchObject({ stored_status: 'pending', held: true });
  expect(recent(stamped.held_since)).toBe(true);

  await heldAgo([d!.deliveryId], 8);
  expect(await expire()).toMatchObject({ held: 1 });
  expect(await h.row(d!.deliveryId)).toMatchObject({ stored_status: 'exhausted', last_error: HELD_EXPIRED_ERROR });
});

test('an expired delivery retried while the destination is still DISABLED is held again, and sent once it is enabled', async () => {
  const { dst, ds: [d] } = await heldDeliveries(1);
  await heldAgo([d!.deliveryId], 8);
  expect(await expire()).toMatchObject({ held: 1 });
  expect((await h.row(d!.deliveryId)).stored_status).toBe('exhausted');

  expect(await retryEvent(retryDeps(), h.tenantId, d!.eventId)).toEqual([d!.deliveryId]);
  expect(await h.row(d!.deliveryId)).toMatchObject({ stored_status: 'replaying', held: true });
  expect(await queued()).not.toContain(d!.deliveryId);

  await changeState(app, 'destination', h.tenantId, dst.id, 'enable');
  expect((await h.row(d!.deliveryId)).held_since).toBeNull();
  await waitFor(async () => (await h.row(d!.deliveryId)).status === 'delivered', { what: 'the retried delivery sent after the enable' });
  expect(rx.requests.filter((r) => r.headers['x-service-delivery-idempotency-key'] === d!.deliveryId)).toHaveLength(1);
  expect((await h.event(d!.eventId)).status).toBe('delivered');
});

test('an expired delivery is retried and delivered once its destination is enabled again', async () => {
  const { dst, ds: [d] } = await heldDeliveries(1);
  await heldAgo([d!.deliveryId], 8);
  expect(await expire()).toMatchObject({ held: 1 });
  // The enable sends nothing: the delivery is in the DLQ, not held.
  await changeState(app, 'destination', h.tenantId, dst.id, 'enable');
  expect(await h.row(d!.deliveryId)).toMatchObject({ stored_status: 'exhausted', held: false, last_error: HELD_EXPIRED_ERROR });

  expect(await retryEvent(retryDeps(), h.tenantId, d!.eventId)).toEqual([d!.deliveryId]);
  expect(await h.row(d!.deliveryId)).toMatchObject({ held: false, held_since: null });
  await waitFor(async () => (await h.row(d!.deliveryId)).status === 'delivered', { what: 'the retried delivery sent' });
  expect(rx.requests.filter((r) => r.headers['x-service-delivery-idempotency-key'] === d!.deliveryId)).toHaveLength(1);
  expect((await h.event(d!.eventId)).status).toBe('delivered');
});

describe('migration 20261125000000_held_expiry on a database with held deliveries', () => {
  const BASE = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
  const MIGRATIONS = resolve(__dirname, '../prisma/migrations');
  const schema = `hl_heldexpiry_mig_${process.pid}`;
  const u = new URL(BASE);
  u.searchParams.set('schema', schema);
  const url = u.toString();

  afterAll(async () => {
    const c = new Client({ connectionString: parseDatabaseUrl(BASE).connectionString });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  test('stamps the rows already held with the deploy\'s time (not their created_at) and builds the expiry index', async () => {
    // The migrations before it, applied to an empty schema.
    const dir = mkdtempSync(join(tmpdir(), 'hl-held-expiry-'));
    const folders = readdirSync(MIGRATIONS, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
    const self = folders.find((f) => f.startsWith('20261125000000_'))!;
    for (const f of folders.filter((f) => f < self)) cpSync(join(MIGRATIONS, f), join(dir, f), { recursive: true });
    expect(await migrate(url, dir)).not.toContain(self);

    const pool = createPool(url, 1);
    try {
      await pool.query(`INSERT INTO tenants (id, name, updated_at) VALUES ('ten_m', 'm', now())`);
      await pool.query(
        `INSERT INTO destinations (id, tenant_id, name, url, state, updated_at) VALUES
           ('dst_off', 'ten_m', 'off', 'http://127.0.0.1:9/hook', 'ACTIVE', now()), ('dst_on', 'ten_m', 'on', 'http://127.0.0.1:9/hook', 'ACTIVE', now())`,
      );
      await pool.query(`INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id) SELECT 'evt_' || i, 'ten_m', 'ing_x', 'filtered', 'c' FROM generate_series(1, 3) i`);
      // Open on dst_off (held once it is disabled), delivered on dst_off, open on dst_on; all created 30 days ago.
      await pool.query(
        `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, created_at) VALUES
           ('dlv_held', 'ten_m', 'evt_1', 'flw_x', 'dst_off', 'failed', now() - interval '30 days'),
           ('dlv_done', 'ten_m', 'evt_2', 'flw_x', 'dst_off', 'delivered', now() - interval '30 days'),
           ('dlv_open', 'ten_m', 'evt_3', 'flw_x', 'dst_on', 'pending', now() - interval '30 days')`,
      );
      await pool.query(`UPDATE destinations SET state = 'DISABLED' WHERE id = 'dst_off'`);

      cpSync(join(MIGRATIONS, self), join(dir, self), { recursive: true });
      expect(await migrate(url, dir)).toEqual([self]);

      const { rows } = await pool.query<{ id: string; held: boolean; held_since: Date | null }>(`SELECT id, held, held_since FROM deliveries ORDER BY id`);
      const by = Object.fromEntries(rows.map((r) => [r.id, r]));
      expect(by.dlv_held).toMatchObject({ held: true });
      expect(recent(by.dlv_held!.held_since)).toBe(true);
      expect(by.dlv_done).toMatchObject({ held: false, held_since: null });
      expect(by.dlv_open).toMatchObject({ held: false, held_since: null });
      const { rows: idx } = await pool.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'deliveries' AND indexname = 'deliveries_held_since_held_idx'`, [schema]);
      expect(idx[0]?.indexdef).toMatch(/\(held_since\) WHERE \(held AND \(status = ANY/);
      // The trigger now stamps and clears it.
      await pool.query(`UPDATE destinations SET state = 'ACTIVE' WHERE id = 'dst_off'`);
      expect((await pool.query(`SELECT held, held_since FROM deliveries WHERE id = 'dlv_held'`)).rows[0]).toEqual({ held: false, held_since: null });
    } finally {
      await pool.end();
    }
  });
});

test('strays (a stale router inserted a plain pending row after the disable) are marked held, then expire like any held row; an ACTIVE destination’s overdue rows are left', async () => {
  const { dst } = await heldDeliveries(1);
  // Inserted after the disable's trigger ran, as a router with a stale flow cache does; its job found nothing to claim.
  const stray = await h.delivery(dst.id);
  const busy = await h.delivery((await h.destination(rx.url)).id);
  // Both overdue by 10 minutes (the stray for ever; the ACTIVE one as a backlog would be).
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '10 minutes' WHERE id = ANY($1::text[])`, [[stray.deliveryId, busy.deliveryId]]);
  expect((await h.row(stray.deliveryId)).held).toBe(false);

  expect(await expire()).toMatchObject({ held: 0 });
  const marked = await h.row(stray.deliveryId);
  expect([marked.status, marked.held, recent(marked.held_since)]).toEqual(['pending', true, true]);
  expect(await h.row(busy.deliveryId)).toMatchObject({ held: false, held_since: null });

  // From now on a held row: it expires after the retention...
  await heldAgo([stray.deliveryId], 8);
  expect(await expire()).toMatchObject({ held: 1 });
  expect(await h.row(stray.deliveryId)).toMatchObject({ status: 'exhausted', held: false, last_error: HELD_EXPIRED_ERROR });
  expect((await h.row(busy.deliveryId)).status).toBe('pending');
  await h.db.pool.query(`UPDATE deliveries SET status = 'exhausted' WHERE id = $1`, [busy.deliveryId]);
});

test('a stray is not marked held once its destination is enabled again (the mark re-reads the state under a lock)', async () => {
  const { dst, ds } = await heldDeliveries(1);
  const stray = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '10 minutes' WHERE id = $1`, [stray.deliveryId]);
  await changeState(app, 'destination', h.tenantId, dst.id, 'enable');
  expect(await expire()).toMatchObject({ held: 0 });
  expect((await h.row(stray.deliveryId)).held).toBe(false);
  await waitFor(async () => (await h.row(ds[0]!.deliveryId)).status === 'delivered', { timeoutMs: 20_000 });
});

test('a stray is marked held even when a full batch of older overdue rows that are never claimed or held (a DISABLED flow to an ACTIVE destination) is ahead of it', async () => {
  // Three deliveries of a DISABLED flow to an ACTIVE destination: never claimed nor held, so
  // they stay overdue (a day here) at the head of the due index, ahead of any stray.
  const active = await h.destination(rx.url);
  const parked = [await h.delivery(active.id), await h.delivery(active.id), await h.delivery(active.id)].map((d) => d.deliveryId);
  await h.db.pool.query(`UPDATE delivery_flows SET state = 'DISABLED' WHERE id IN (SELECT flow_id FROM deliveries WHERE id = ANY($1::text[]))`, [parked]);
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 day' WHERE id = ANY($1::text[])`, [parked]);
  const { dst } = await heldDeliveries(0);
  const stray = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '10 minutes' WHERE id = $1`, [stray.deliveryId]);

  // Batches of 2: fewer than the parked rows ahead of the stray.
  expect(await expire({ batchSize: 2, maxBatches: 1 })).toMatchObject({ held: 0 });
  const marked = await h.row(stray.deliveryId);
  expect([marked.stored_status, marked.held, recent(marked.held_since)]).toEqual(['pending', true, true]);
  for (const id of parked) expect(await h.row(id)).toMatchObject({ stored_status: 'pending', held: false, held_since: null });
  await h.db.pool.query(`UPDATE deliveries SET status = 'exhausted' WHERE id = ANY($1::text[])`, [[...parked, stray.deliveryId]]);
});
