// An outcome write retried after the connection to PostgreSQL was lost (recordSent in
// services/deliverer/src/settle-deliveries.ts) records its attempt once: also when the call
// had committed and only its reply was lost (migration 20261201000000_attempts_once), where
// the retry used to insert the attempt again (two rows of one number for one request, and
// two signed receipts). A write lost before PostgreSQL saw it is still retried and recorded.
// The faults are real: a TCP proxy between the deliverer's pool and PostgreSQL either
// forwards the call and swallows its reply (closing the connection once PostgreSQL has
// answered, committed), or closes the connection instead of forwarding it.
import { createPool, type Pool } from '@hookline/db';
import { evidenceKey, issueReceipts } from '@hookline/evidence';
import { startReceiver, type Receiver } from '@hookline/testing';
import { createCoalescedDb } from '../services/deliverer/src/coalesced-db';
import type { DeliverDeps } from '../services/deliverer/src/deliver-batch';
import { createHarness, type Harness } from './deliverer-fixtures';
import { startPgFaultProxy, type PgFault, type PgFaultProxy } from './support/pg-fault-proxy';

jest.setTimeout(60_000);

const key = evidenceKey('test-secrets-key-0123456789abcdef');

let h: Harness;
let proxy: PgFaultProxy;
let pool: Pool;
let deps: DeliverDeps;
let rx: Receiver;

beforeAll(async () => {
  h = await createHarness('lostreply');
  proxy = await startPgFaultProxy(Number(new URL(h.db.url).port || 5432));
  pool = createPool(proxy.url(h.db.url), 3);
  // The harness's deliverer, its database calls (claims, outcome writes, give-backs) through the proxy.
  deps = {
    ...h.deps,
    pool,
    db: createCoalescedDb(pool, {
      leaseMs: h.config.DELIVERY_LEASE_MS,
      claimSlackMs: h.config.CLAIM_SLACK_MS,
      instanceId: 'lost-reply-test',
      maxInFlight: h.config.DELIVERER_DB_IN_FLIGHT,
      maxJobs: h.config.DELIVERER_CONCURRENCY,
    }),
  };
  rx = await startReceiver(() => ({ status: 200, body: 'ok' }));
});

afterAll(async () => {
  await rx?.close();
  await pool?.end();
  await proxy?.close();
  await h?.close();
});

/** One delivery sent once (200) by the deliverer, whose first outcome write meets `fault`. */
async function sendThrough(fault: PgFault) {
  const dst = await h.destination(`${rx.url}/${fault}`);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  const before = proxy.tripped();
  proxy.arm(fault, 'record_delivery_outcomes');
  const summary = await h.run([deliveryId], deps);
  expect(proxy.tripped()).toBe(before + 1);
  // The attempt id(s) the failed try sent, read from its bytes on the wire.
  const firstTry = proxy.hitRequests().at(-1)!.match(/att_[0-9a-z]+/g) ?? [];
  await issueReceipts(h.db.pool, key);
  const attempts = (await h.db.pool.query<{ id: string; number: number; status_code: number }>('SELECT id, number, status_code FROM delivery_attempts WHERE delivery_id = $1', [deliveryId])).rows;
  const receipts = (await h.db.pool.query<{ attempt_id: string; outcome: string }>('SELECT attempt_id, outcome FROM evidence_receipts WHERE delivery_id = $1', [deliveryId])).rows;
  return { summary, deliveryId, eventId, firstTry, attempts, receipts, requests: rx.requests.filter((q) => q.url === `/${fault}`).length };
}

// lose-reply: the first try committed (its attempt is the one there) and the retry added
// nothing. drop-request: PostgreSQL never saw the first try; the retry recorded it under the
// id the first try sent.
test.each([
  ['lose-reply', 'a COMMIT whose reply was lost, retried: one attempt row, one receipt'],
  ['drop-request', 'a write lost before PostgreSQL saw it is retried: recorded once, under the id its first try sent'],
] as const)('%s: %s', async (fault, _title) => {
  const r = await sendThrough(fault);
  expect(r.summary).toMatchObject({ claimed: 1, delivered: 1 });
  expect(r.requests).toBe(1);
  expect(r.firstTry).toHaveLength(1);
  expect(r.attempts).toEqual([{ id: r.firstTry[0], number: 1, status_code: 200 }]);
  expect(r.receipts).toEqual([{ attempt_id: r.firstTry[0], outcome: 'succeeded' }]);
  expect(await h.row(r.deliveryId)).toMatchObject({ status: 'delivered', attempt_count: 1, lease_owner: null });
  expect((await h.event(r.eventId)).status).toBe('delivered');
});
