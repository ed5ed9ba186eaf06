// Outcomes are written by one call of record_delivery_outcomes (migration
// 20261121050000_outcomes_in_one_call). Two batches that finish deliveries of the same
// event at the same moment must leave the event with the status of all its deliveries:
// each statement of the function reads after the event's lock is held, so the second
// writer sees the first's commit. One statement doing all of it would read from a snapshot
// taken before the lock, and both writers would miss each other.
import { createPool, newId, type Pool } from '@hookline/db';
import { waitFor } from '@hookline/testing';
import { CLAIMABLE_SQL, recordOutcomes, recordOwnedOutcomes, type Decision, type Outcome } from '@hookline/delivery';
import { insertFlow } from './router-fixtures';
import { claimDeliveries } from '../services/deliverer/src/claim-deliveries';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
/**
 * The outcome writers of this file run on their own pool whose connections carry an
 * application_name unique to this file (its schema), so the waiters counted below are this
 * file's own: other files (api replay, deliverer recording) call record_delivery_outcomes
 * on the same server and may be waiting for a lock at the same moment.
 */
let writers: Pool;
let appName: string;

beforeAll(async () => {
  h = await createHarness('recout');
  appName = h.db.schema;
  const url = new URL(h.db.url);
  url.searchParams.set('application_name', appName);
  writers = createPool(url.toString(), 5);
});

afterAll(async () => {
  await writers?.end();
  await h?.close();
});

/** This file's outcome calls now waiting for a lock (optionally: directly behind backend `blocker`). */
async function ownWaiters(blocker?: number): Promise<number> {
  const { rows } = await h.db.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity
      WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%record_delivery_outcomes%'
        AND ($2::int IS NULL OR $2::int = ANY (pg_blocking_pids(pid)))`,
    [appName, blocker ?? null],
  );
  return Number(rows[0]!.n);
}

/** An event with `n` deliveries to one destination, each claimed under its own owner. */
async function fannedOut(n: number): Promise<{ eventId: string; deliveries: Array<{ id: string; owner: string }> }> {
  const dst = await h.destination('http://127.0.0.1:9/never-sent');
  const first = await h.delivery(dst.id);
  const ids = [first.deliveryId];
  for (let i = 1; i < n; i++) {
    const flowId = await insertFlow(h.db.pool, { tenantId: h.tenantId, ingesterId: await ingesterOf(first.eventId), destinationId: dst.id });
    const id = newId('dlv');
    await h.db.pool.query('INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id) VALUES ($1, $2, $3, $4, $5)', [id, h.tenantId, first.eventId, flowId, dst.id]);
    ids.push(id);
  }
  const deliveries = [];
  for (const id of ids) {
    const owner = `test:${id}`;
    expect(await claimDeliveries(h.db.pool, { deliveryIds: [id], leaseOwner: owner, leaseMs: 60_000, slackMs: 250 })).toHaveLength(1);
    deliveries.push({ id, owner });
  }
  return { eventId: first.eventId, deliveries };
}

async function ingesterOf(eventId: string): Promise<string> {
  return (await h.db.pool.query<{ ingester_id: string }>('SELECT ingester_id FROM events WHERE id = $1', [eventId])).rows[0]!.ingester_id;
}

function outcome(deliveryId: string, eventId: string, decision: Decision): Outcome {
  const ok = decision.status === 'delivered';
  return {
    deliveryId,
    tenantId: h.tenantId,
    eventId,
    attemptNumber: 1,
    decision,
    result: { statusCode: ok ? 200 : 500, errorKind: ok ? null : 'http_error', error: ok ? null : 'HTTP 500', responseBody: 'ok', responseHeaders: { 'content-type': 'text/plain' }, startedAt: new Date(), durationMs: 3 },
  };
}

/** Runs `writes` while another transaction holds the event's row lock, and releases it once all of them wait for it. */
async function behindEventLock(eventId: string, writes: Array<() => Promise<unknown>>): Promise<void> {
  const holder = await h.lockEvent(eventId);
  try {
    const running = writes.map((w) => w());
    // Asked outside the holder's transaction: a transaction sees one snapshot of pg_stat_activity.
    // Only this file's writers (application_name) are counted; the second waits behind the
    // first waiter rather than the holder, so the count is not narrowed to the holder's pid.
    for (let i = 0; i < 800 && (await ownWaiters()) < writes.length; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await ownWaiters()).toBe(writes.length);
    await holder.query('COMMIT');
    await Promise.all(running);
  } finally {
    await holder.end();
  }
}

test('two batches finishing one event at once: the event ends delivered', async () => {
  const { eventId, deliveries: [a, b] } = await fannedOut(2);
  await behindEventLock(eventId, [
    () => recordOutcomes(writers, a!.owner, [outcome(a!.id, eventId, { status: 'delivered' })]),
    () => recordOutcomes(writers, b!.owner, [outcome(b!.id, eventId, { status: 'delivered' })]),
  ]);
  expect((await h.event(eventId)).status).toBe('delivered');
  expect((await h.row(a!.id)).status).toBe('delivered');
  expect((await h.row(b!.id)).status).toBe('delivered');
  expect(await h.attempts(a!.id)).toHaveLength(1);
});

test('one delivered and one failed at once: the event ends failed, the failure scheduled', async () => {
  const { eventId, deliveries: [a, b] } = await fannedOut(2);
  await behindEventLock(eventId, [
    () => recordOutcomes(writers, a!.owner, [outcome(a!.id, eventId, { status: 'delivered' })]),
    () => recordOutcomes(writers, b!.owner, [outcome(b!.id, eventId, { status: 'failed', delayMs: 60_000 })]),
  ]);
  expect((await h.event(eventId)).status).toBe('failed');
  const failed = await h.row(b!.id);
  expect(failed).toMatchObject({ status: 'failed', attempt_count: 1, last_status_code: 500, lease_owner: null });
  expect(failed.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + 30_000);
});

test('an outcome under a lease that is no longer held records the attempt and leaves the delivery alone', async () => {
  const { eventId, deliveries: [a] } = await fannedOut(1);
  await recordOutcomes(h.db.pool, 'someone-else:1', [outcome(a!.id, eventId, { status: 'delivered' })]);
  expect(await h.row(a!.id)).toMatchObject({ status: 'delivering', lease_owner: a!.owner });
  expect(await h.attempts(a!.id)).toHaveLength(1);
  expect((await h.event(eventId)).status).toBe('filtered');
});

test('the function guards with the statuses a lease can hold (CLAIMABLE_STATUSES)', async () => {
  const { rows } = await h.db.pool.query<{ def: string }>(`SELECT pg_get_functiondef('record_delivery_outcomes'::regproc) AS def`);
  expect(rows[0]!.def).toContain(`d.status IN (${CLAIMABLE_SQL})`);
});

test('the function is called with its arguments in delivery id order whatever the order of the outcomes, so every writer locks deliveries in id order', async () => {
  // Completion order, two merged jobs: the function locks deliveries in its arrays' order,
  // and a destination's disable, enable and delete lock them in id order.
  const calls: unknown[][] = [];
  const pool = { query: async (_sql: string, params: unknown[]) => (calls.push(params), { rows: [], rowCount: 0 }) } as unknown as Pool;
  const mk = (id: string, n: number, decision: Decision): Outcome => ({ ...outcome(id, `evt_${id}`, decision), attemptNumber: n });
  await recordOwnedOutcomes(pool, [
    { leaseOwner: 'job1', outcomes: [mk('dlv_0c', 3, { status: 'delivered' }), mk('dlv_0a', 1, { status: 'failed', delayMs: 5000 })] },
    { leaseOwner: 'job2', outcomes: [mk('dlv_0b', 2, { status: 'exhausted' }), mk('dlv_00', 4, { status: 'delivered' })] },
  ]);
  expect(calls).toHaveLength(1);
  const p = calls[0]!;
  expect(p[2]).toEqual(['dlv_00', 'dlv_0a', 'dlv_0b', 'dlv_0c']); // delivery ids
  expect(p[3]).toEqual([4, 1, 2, 3]); // attempt numbers, row by row
  expect(p[11]).toEqual(['delivered', 'failed', 'exhausted', 'delivered']); // statuses
  expect(p[12]).toEqual([0, 5000, 0, 0]); // delays
  expect(p[13]).toEqual(['job2', 'job1', 'job2', 'job1']); // lease owners
  expect((p[0] as string[]).every((id) => id.startsWith('att_'))).toBe(true);
  // The same through recordOutcomes (the edge paths).
  calls.length = 0;
  await recordOutcomes(pool, 'edge', [mk('dlv_2', 1, { status: 'delivered' }), mk('dlv_1', 1, { status: 'delivered' })], { via: 'edge' });
  expect(calls[0]![2]).toEqual(['dlv_1', 'dlv_2']);
});

test('a deadlock victim is written again: both outcomes recorded once, for every caller of recordOwnedOutcomes', async () => {
  const { eventId, deliveries } = await fannedOut(2);
  const [a, b] = [...deliveries].sort((x, y) => (x.id < y.id ? -1 : 1));
  // Another transaction (a lifecycle change, say) holds b and, once the outcome call waits
  // for b while holding a, asks for a: a lock cycle. The outcome call's backend checks for
  // deadlocks after the server's deadlock_timeout (1 s); this one only after 10 s, so the
  // outcome call is the one PostgreSQL aborts.
  const other = await h.db.pool.connect();
  try {
    await other.query(`SET deadlock_timeout = '10s'`);
    const otherPid = Number((await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE', [b!.id]);
    const written = recordOwnedOutcomes(writers, [
      { leaseOwner: b!.owner, outcomes: [outcome(b!.id, eventId, { status: 'delivered' })] },
      { leaseOwner: a!.owner, outcomes: [outcome(a!.id, eventId, { status: 'delivered' })] },
    ]);
    // This file's outcome call, waiting behind `other` (which holds b): it holds a by then.
    await waitFor(async () => (await ownWaiters(otherPid)) > 0, { what: 'the outcome call waiting for b' });
    await other.query('SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE', [a!.id]);
    await other.query('COMMIT');
    expect(await written).toHaveLength(2);
  } finally {
    await other.query('ROLLBACK').catch(() => undefined);
    other.release();
  }
  for (const d of [a!, b!]) {
    expect((await h.row(d.id)).status).toBe('delivered');
    expect(await h.attempts(d.id)).toHaveLength(1);
  }
  expect((await h.event(eventId)).status).toBe('delivered');
});
