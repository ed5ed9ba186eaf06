// A claim writes only the lease (migration 20261121040000_lease_only_claims): the status
// stays claimable, PostgreSQL updates the rows in place (HOT: no new index entries), the
// API view shows them as `delivering`, and a second claim, the recovery sweep and a
// manual retry all leave a held delivery alone until its lease runs out.
import { Client } from 'pg';
import { parseDatabaseUrl, type Pool } from '@hookline/db';
import { shownStatus } from '@hookline/delivery';
import { claimDeliveries } from '../services/deliverer/src/claim-deliveries';
import { recoverDeliveries } from '../services/deliverer/src/recover-deliveries';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;

beforeAll(async () => {
  h = await createHarness('dlvlease');
});

afterAll(async () => {
  await h?.close();
});

async function pending(n: number): Promise<string[]> {
  const dst = await h.destination('http://127.0.0.1:9/never-sent');
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await h.delivery(dst.id)).deliveryId);
  return ids;
}

const claim = (pool: Pool | Client, ids: string[], leaseOwner: string, leaseMs = 60_000) =>
  claimDeliveries(pool as Pool, { deliveryIds: ids, leaseOwner, leaseMs, slackMs: 250 });

test('a claim changes no indexed column: the rows are updated in place (HOT), their status kept', async () => {
  const ids = await pending(40);
  const client = new Client({ connectionString: parseDatabaseUrl(h.db.url).connectionString });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${h.db.schema}"`);
    await client.query('BEGIN');
    const claimed = await claim(client, ids, 'test:hot');
    // This transaction's own counts: rows updated, and of those, updated in place.
    const { rows } = await client.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables WHERE relid = 'deliveries'::regclass`,
    );
    await client.query('COMMIT');
    expect(claimed).toHaveLength(40);
    expect(Number(rows[0]!.upd)).toBe(40);
    // In place where the page has room: the new versions carry the lease columns (null at
    // insert), so a page's last rows may not fit; with status set, none would be HOT.
    expect(Number(rows[0]!.hot)).toBeGreaterThanOrEqual(36);
  } finally {
    await client.end();
  }
  const stored = await h.db.pool.query<{ status: string; lease_owner: string; held: boolean }>(
    `SELECT status::text, lease_owner, lease_until > now() AS held FROM deliveries WHERE id = ANY($1)`,
    [ids],
  );
  expect(stored.rows.every((r) => r.status === 'pending' && r.lease_owner === 'test:hot' && r.held)).toBe(true);
  expect((await h.row(ids[0]!)).status).toBe('delivering');
});

test('a held delivery is not claimed again, not swept, until its lease expires', async () => {
  const [a, b] = await pending(2);
  expect((await claim(h.db.pool, [a!, b!], 'first:1', 1_000)).map((d) => d.id).sort()).toEqual([a, b].sort());
  expect(await claim(h.db.pool, [a!, b!], 'second:1')).toEqual([]);
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 minute' WHERE id = ANY($1)`, [[a, b]]);
  const sweep = () => recoverDeliveries({ pool: h.db.pool, producer: h.deps.producer }, { afterMs: 0, batchSize: 100 });
  expect(await sweep()).toBe(0);
  // The first holder vanished: once its lease ran out, recovery and a new claim take them.
  await h.db.pool.query(`UPDATE deliveries SET lease_until = now() - interval '1 millisecond' WHERE id = ANY($1)`, [[a, b]]);
  expect(await sweep()).toBe(2);
  expect(await h.row(a!)).toMatchObject({ status: 'pending', lease_owner: null });
  expect(await claim(h.db.pool, [a!, b!], 'second:2')).toHaveLength(2);
  expect(await h.row(b!)).toMatchObject({ status: 'delivering', stored_status: 'pending', lease_owner: 'second:2' });
});

test('the status the API shows', () => {
  const now = new Date('2026-11-21T12:00:00Z');
  const later = new Date(now.getTime() + 1000);
  const earlier = new Date(now.getTime() - 1000);
  expect(shownStatus('pending', later, now)).toBe('delivering');
  expect(shownStatus('failed', later, now)).toBe('delivering');
  expect(shownStatus('replaying', later, now)).toBe('delivering');
  expect(shownStatus('pending', earlier, now)).toBe('pending');
  expect(shownStatus('failed', null, now)).toBe('failed');
  expect(shownStatus('delivered', later, now)).toBe('delivered');
  expect(shownStatus('exhausted', later, now)).toBe('exhausted');
});
