// One destination (or one tenant) cannot take the whole process: a slow destination with
// a high max_concurrency holds its share of DELIVERER_MAX_IN_FLIGHT
// (DELIVERER_DESTINATION_MAX_SHARE) and borrows beyond it only while a share stays free, its
// claims likewise within DELIVERER_MAX_CLAIMED, a tenant at most DELIVERER_TENANT_MAX_SHARE,
// and another destination's deliveries go out while the slow one's requests are still
// unanswered. The slow receiver holds every answer until the
// test lets it go: the ordering is checked, not a duration.
import { newId } from '@hookline/db';
import { newWhsecSecret } from '@hookline/signing';
import { seedTenant, startReceiver, waitFor, type Receiver } from '@hookline/testing';
import type { BatchSummary } from '../services/deliverer/src/deliver-batch';
import { createHarness, type Harness } from './deliverer-fixtures';
import { insertEvent, insertFlow, insertIngester } from './router-fixtures';

jest.setTimeout(60_000);

let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await createHarness('dlvshare');
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

/**
 * A receiver that holds every answer until `release()`; counts the requests open at once
 * (the peak) and in total. After `release()` it answers at once.
 */
async function slowReceiver(): Promise<{ rx: Receiver; open: () => number; peak: () => number; release: () => void }> {
  let open = 0;
  let peak = 0;
  let releaseAll!: () => void;
  const released = new Promise<void>((r) => (releaseAll = r));
  let isReleased = false;
  const rx = await startReceiver(() => {
    if (isReleased) return { status: 200, body: 'ok' };
    open++;
    peak = Math.max(peak, open);
    return { status: 200, body: 'ok', hold: released.then(() => void open--) };
  });
  receivers.push(rx);
  return {
    rx,
    open: () => open,
    peak: () => peak,
    release: () => {
      isReleased = true;
      releaseAll();
    },
  };
}

async function fastReceiver(): Promise<Receiver> {
  const rx = await startReceiver();
  receivers.push(rx);
  return rx;
}

/** `n` deliveries to `destinationId` (of the harness's tenant). */
async function deliveries(destinationId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await h.delivery(destinationId)).deliveryId);
  return ids;
}

/** Whether `p` settled before `guardMs` (a guard for the failing case only: it never bounds the passing one). */
async function settlesWithin<T>(p: Promise<T>, guardMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<false>((r) => (timer = setTimeout(() => r(false), guardMs)));
  const done = await Promise.race([p.then(() => true as const, () => true as const), guard]);
  clearTimeout(timer);
  return done;
}

const countWhere = async (ids: string[], where: string): Promise<number> =>
  (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1) AND ${where}`, [ids])).rows[0]!.n;

/**
 * Runs A's deliveries, waits until `aOut` of them are out at the slow receiver, then B's;
 * observes B's progress while none of A's is answered, then lets A's answers go.
 */
async function bBehindSlowA(
  deps: Parameters<Harness['run']>[1],
  slow: Awaited<ReturnType<typeof slowReceiver>>,
  fast: Receiver,
  aIds: string[],
  bIds: string[],
  aOut: number,
): Promise<{ bWent: boolean; bArrived: number; aAnswered: number; aPeak: number; aSummary: BatchSummary; bSummary: BatchSummary }> {
  const aRun = h.run(aIds, deps);
  // A's requests fill what they may, and stay unanswered.
  await waitFor(() => slow.open() >= aOut, { what: 'A has requests out' });
  const bRun = h.run(bIds, deps);
  const bWent = await settlesWithin(bRun, 20_000);
  // Observed while none of A's requests has been answered.
  const bArrived = fast.requests.length;
  const aPeak = slow.peak();
  const aAnswered = slow.rx.requests.filter((r) => r.answeredAt !== undefined).length;
  slow.release();
  const [aSummary, bSummary] = await Promise.all([aRun, bRun]);
  return { bWent, bArrived, aAnswered, aPeak, aSummary, bSummary };
}

test('a slow destination with max_concurrency 1000 holds all but one share of the in-flight slots; another destination’s deliveries go out meanwhile', async () => {
  // 16 in flight overall; one destination's share 0.25: 4 of its own, then borrowed up to 16 − 4.
  const { deps } = h.replica({ DELIVERER_MAX_IN_FLIGHT: '16', DELIVERER_DESTINATION_MAX_SHARE: '0.25' });
  const slow = await slowReceiver();
  const fast = await fastReceiver();
  const a = await h.destination(slow.rx.url, { config: { max_concurrency: 1000, timeout_ms: 60_000 } });
  const b = await h.destination(fast.url);
  const aIds = await deliveries(a.id, 40);
  const bIds = await deliveries(b.id, 5);

  const { bWent, bArrived, aAnswered, aPeak, aSummary, bSummary } = await bBehindSlowA(deps, slow, fast, aIds, bIds, 12);

  expect({ bWent, bArrived, aAnswered }).toEqual({ bWent: true, bArrived: 5, aAnswered: 0 });
  expect(bSummary).toMatchObject({ claimed: 5, delivered: 5 });
  // Never more than all but one share in flight at the receiver, and still all of A delivered.
  expect(aPeak).toBe(12);
  expect(slow.peak()).toBe(12);
  expect(aSummary).toMatchObject<Partial<BatchSummary>>({ claimed: 40, delivered: 40 });
  expect(slow.rx.requests).toHaveLength(40);
});

test('a destination’s claims beyond its share of DELIVERER_MAX_CLAIMED are given back unsent (no attempt used), so other deliveries get claimed and sent; all are delivered in the end', async () => {
  // Claim budget 20 (chunks of 15: the budget beside a share); one destination's share:
  // 0.25 × 20 = 5. It may borrow claims up to the budget less a share and a chunk: 0 here.
  const env = { DELIVERER_MAX_IN_FLIGHT: '16', DELIVERER_MAX_CLAIMED: '20', DELIVERER_DESTINATION_MAX_SHARE: '0.25' };
  const { deps } = h.replica(env);
  const slow = await slowReceiver();
  const fast = await fastReceiver();
  const a = await h.destination(slow.rx.url, { config: { max_concurrency: 1000, timeout_ms: 60_000 } });
  const b = await h.destination(fast.url);
  const aIds = await deliveries(a.id, 60);
  const bIds = await deliveries(b.id, 3);

  const aRun = h.run(aIds, deps);
  await waitFor(() => slow.open() >= 4, { what: 'A has requests out' });
  const bRun = h.run(bIds, deps);
  const bWent = await settlesWithin(bRun, 20_000);
  const bArrived = fast.requests.length;
  // The deliveries beyond the share (all of A's but 5) come back to the table, unsent: no
  // attempt (A's last chunks may still be giving theirs back as B's complete).
  const backUnsent = (): Promise<number> => countWhere(aIds, `lease_owner IS NULL AND attempt_count = 0 AND status = 'pending'`);
  const aBackUnsent = await waitFor(async () => ((await backUnsent()) === 55 ? 55 : null), { what: '55 of A given back', timeoutMs: 10_000 }).catch(backUnsent);
  const aLeased = await countWhere(aIds, `lease_until > now()`);
  const aAnswered = slow.rx.requests.filter((r) => r.answeredAt !== undefined).length;
  slow.release();
  const [aSummary] = await Promise.all([aRun, bRun]);

  expect({ bWent, bArrived, aAnswered }).toEqual({ bWent: true, bArrived: 3, aAnswered: 0 });
  expect(aLeased).toBe(5);
  expect(aBackUnsent).toBe(55);
  expect(slow.peak()).toBeLessThanOrEqual(5);
  expect(aSummary).toMatchObject({ claimed: 60, delivered: 5, deferred: 55 });
  expect(await h.db.pool.query(`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY($1)`, [aIds]).then((r) => r.rows[0].n)).toBe(5);

  // The ones given back have their delayed jobs: a worker delivers every one, each in one attempt.
  h.startWorker(4);
  await waitFor(async () => (await countWhere(aIds, `status = 'delivered'`)) === aIds.length, { what: 'all of A delivered', timeoutMs: 45_000 });
  expect(await countWhere(aIds, `attempt_count = 1`)).toBe(aIds.length);
  expect(new Set(slow.rx.requests.map((r) => String(r.headers['x-service-delivery-idempotency-key']))).size).toBe(aIds.length);
});

/** A second tenant with its own destination and `n` deliveries to it. */
async function otherTenantDeliveries(url: string, n: number): Promise<string[]> {
  const { tenantId } = await seedTenant(h.db.pool);
  const ingesterId = await insertIngester(h.db.pool, tenantId);
  const destinationId = newId('dst');
  await h.db.pool.query(`INSERT INTO destinations (id, tenant_id, name, url, method, config, secrets, updated_at) VALUES ($1, $2, 'rx', $3, 'POST', '{}', $4, now())`, [
    destinationId,
    tenantId,
    url,
    [h.box.seal(newWhsecSecret())],
  ]);
  const flowId = await insertFlow(h.db.pool, { tenantId, ingesterId, destinationId });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const eventId = await insertEvent(h.db.pool, { tenantId, ingesterId, status: 'filtered' });
    const id = newId('dlv');
    await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id) VALUES ($1, $2, $3, $4, $5)`, [id, tenantId, eventId, flowId, destinationId]);
    ids.push(id);
  }
  return ids;
}

test('a tenant’s slow destinations together hold at most the tenant’s share (DELIVERER_TENANT_MAX_SHARE); another tenant’s deliveries go out meanwhile', async () => {
  // 16 in flight: a destination may hold 4, a tenant 8.
  const { deps } = h.replica({ DELIVERER_MAX_IN_FLIGHT: '16', DELIVERER_DESTINATION_MAX_SHARE: '0.25', DELIVERER_TENANT_MAX_SHARE: '0.5' });
  const slow = await slowReceiver();
  const fast = await fastReceiver();
  // The harness tenant: four slow destinations (4 × 4 would be every slot).
  const aDests = await Promise.all([1, 2, 3, 4].map((i) => h.destination(`${slow.rx.url}/a${i}`, { config: { max_concurrency: 1000, timeout_ms: 60_000 } })));
  const aIds = (await Promise.all(aDests.map((d) => deliveries(d.id, 10)))).flat();
  const bIds = await otherTenantDeliveries(fast.url, 3);

  const { bWent, bArrived, aAnswered, aPeak, aSummary, bSummary } = await bBehindSlowA(deps, slow, fast, aIds, bIds, 8);

  expect({ bWent, bArrived, aAnswered }).toEqual({ bWent: true, bArrived: 3, aAnswered: 0 });
  expect(bSummary).toMatchObject({ claimed: 3, delivered: 3 });
  expect(aPeak).toBe(8);
  expect(slow.peak()).toBe(8);
  expect(aSummary).toMatchObject({ claimed: 40, delivered: 40 });
});

test('a share outside (0, 1] is refused at startup', () => {
  expect(() => h.replica({ DELIVERER_DESTINATION_MAX_SHARE: '0' })).toThrow(/DELIVERER_DESTINATION_MAX_SHARE/);
  expect(() => h.replica({ DELIVERER_DESTINATION_MAX_SHARE: '1.5' })).toThrow(/DELIVERER_DESTINATION_MAX_SHARE/);
  expect(() => h.replica({ DELIVERER_TENANT_MAX_SHARE: '0' })).toThrow(/DELIVERER_TENANT_MAX_SHARE/);
});
