// A deadlock victim is run again. The deliverer's outcome writes (record_delivery_outcomes,
// retried by retryTransient while the lease holds) and a destination's lifecycle changes
// (retryingDeadlocks) lock many deliveries; both take them in id order now, but a
// deadlock with anything else must not lose an outcome (the delivery would be sent again
// once its lease expired). Provoked for real here, deterministically: two rows locked in
// opposite order by two connections, the order of their waits set by an advisory lock,
// the victim chosen by its shorter deadlock_timeout.
import { Client } from 'pg';
import { parseDatabaseUrl, retryTransient, retryingDeadlocks } from '@hookline/db';
import { createTestDatabase, waitFor, type TestDatabase } from '@hookline/testing';

jest.setTimeout(30_000);

let db: TestDatabase;
let holder: Client;
let victim: Client;
let gate: Client;
const pids: Record<'holder' | 'victim', number> = { holder: 0, victim: 0 };
const GATE = 424242;

const connect = async (deadlockTimeout: string): Promise<Client> => {
  const { connectionString, schema } = parseDatabaseUrl(db.url);
  const c = new Client({ connectionString });
  await c.connect();
  await c.query(`SET search_path TO "${schema}"`);
  await c.query(`SET deadlock_timeout = '${deadlockTimeout}'`);
  return c;
};
const pid = async (c: Client): Promise<number> => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

beforeAll(async () => {
  db = await createTestDatabase('deadlockretry');
  await db.pool.query('CREATE TABLE lock_pair (id int PRIMARY KEY, n int NOT NULL)');
  // PostgreSQL checks for a deadlock once, deadlock_timeout after a wait starts, and the
  // checker aborts its own transaction. The holder starts waiting first and checks only
  // after 10 s; the victim waits last and checks after 50 ms: the victim is aborted.
  holder = await connect('10s');
  victim = await connect('50ms');
  gate = await connect('10s');
  pids.holder = await pid(holder);
  pids.victim = await pid(victim);
});

beforeEach(async () => {
  await db.pool.query('TRUNCATE lock_pair');
  await db.pool.query('INSERT INTO lock_pair VALUES (1, 0), (2, 0)');
});

afterEach(async () => {
  await holder.query('ROLLBACK').catch(() => undefined);
  await gate.query('SELECT pg_advisory_unlock_all()');
});

afterAll(async () => {
  for (const c of [holder, victim, gate]) await c?.end();
  await db?.drop();
});

const waitingForLock = (who: 'holder' | 'victim') =>
  waitFor(async () => (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pids[who]])).rowCount === 1, { what: `the ${who} waiting for a lock` });

/**
 * The holder locks row 1; `run` (on the victim's connection) locks row 2 and waits at the
 * gate; the holder asks for row 2 and waits; the gate opens and the victim asks for row 1:
 * a cycle, and the victim's check aborts the victim (40P01). The holder goes on and
 * commits. Returns what `run` returns.
 */
async function deadlocked<T>(run: () => Promise<T>): Promise<T> {
  await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
  await holder.query('BEGIN');
  await holder.query('UPDATE lock_pair SET n = n + 1 WHERE id = 1');
  const running = run();
  running.catch(() => undefined);
  await waitingForLock('victim');
  const holding = holder.query('UPDATE lock_pair SET n = n + 1 WHERE id = 2');
  holding.catch(() => undefined);
  await waitingForLock('holder');
  await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
  await holding;
  await holder.query('COMMIT');
  return running;
}

const counts = async (): Promise<number[]> => (await db.pool.query<{ n: number }>('SELECT n FROM lock_pair ORDER BY id')).rows.map((r) => r.n);

/** One statement that locks row 2, passes the gate, then locks row 1 (as record_delivery_outcomes is one call). */
const OPPOSITE_ORDER = `DO $$ BEGIN
  UPDATE lock_pair SET n = n + 1 WHERE id = 2;
  PERFORM pg_advisory_xact_lock(${GATE});
  UPDATE lock_pair SET n = n + 1 WHERE id = 1;
END $$`;

test('without a retry, the victim fails with 40P01 (the set-up makes a real deadlock)', async () => {
  await expect(deadlocked(() => victim.query(OPPOSITE_ORDER))).rejects.toMatchObject({ code: '40P01' });
  expect(await counts()).toEqual([1, 1]);
});

test('retryTransient (the deliverer outcome writes) runs the deadlock victim again, and its work is done once', async () => {
  const errors: unknown[] = [];
  let calls = 0;
  await deadlocked(() =>
    retryTransient(
      () => {
        calls++;
        return victim.query(OPPOSITE_ORDER);
      },
      { deadlineMs: 10_000, initialDelayMs: 1, onRetry: (err) => errors.push(err) },
    ),
  );
  expect(calls).toBe(2);
  expect(errors).toMatchObject([{ code: '40P01' }]);
  expect(await counts()).toEqual([2, 2]);
});

test('retryingDeadlocks (lifecycle changes, the automatic disable) runs the victim transaction again from its BEGIN', async () => {
  let calls = 0;
  const tx = async (): Promise<void> => {
    calls++;
    await victim.query('BEGIN');
    try {
      await victim.query('UPDATE lock_pair SET n = n + 1 WHERE id = 2');
      await victim.query(`SELECT pg_advisory_xact_lock(${GATE})`);
      await victim.query('UPDATE lock_pair SET n = n + 1 WHERE id = 1');
      await victim.query('COMMIT');
    } catch (err) {
      await victim.query('ROLLBACK');
      throw err;
    }
  };
  await deadlocked(() => retryingDeadlocks(tx));
  expect(calls).toBe(2);
  expect(await counts()).toEqual([2, 2]);
});
