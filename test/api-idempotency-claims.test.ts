// An Idempotency-Key claim belongs to the request that made it for as long as that request
// runs (limits/idempotency.ts): a retry that waits on locks past the stale window keeps it
// (its heartbeat), so a client's retry under the same key answers 409 "still being
// processed" instead of running the write a second time; a request judged dead once its
// handler started is never run again (409 idempotency-outcome-unknown); only a claim whose
// handler never started is taken over, and its request never marks or stores over the claim
// of the one that took it.
// Real slow requests: the test holds the destination's row lock, so a retry waits.
import { setTimeout as sleep } from 'node:timers/promises';
import type { PoolClient } from 'pg';
import { createPool } from '@hookline/db';
import { waitFor } from '@hookline/testing';
import { finishIdempotent, runIdempotent, startIdempotent } from '../services/api/src/limits/idempotency';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

jest.setTimeout(60_000);

/** Short stale window (3 s: a heartbeat every 750 ms) for the slow-request test. */
let fast: ApiHarness;
/** The default window (60 s: a heartbeat every 15 s) for the takeover test. */
let slow: ApiHarness;
beforeAll(async () => {
  fast = await startApi('idemclaimfast', { IDEMPOTENCY_STALE_CLAIM_MS: '3000' });
  slow = await startApi('idemclaimslow');
});
afterAll(async () => {
  await fast?.close();
  await slow?.close();
});

/** A tenant with an event whose one delivery failed: retryable once. */
async function retryable(h: ApiHarness) {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
  const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'failed', attempts: 2 });
  return { t, p, evt, dlv, path: `/v1/tenants/${t.tenantId}/events/${evt}/retry` };
}

/** Holds the destination's row lock (FOR UPDATE): a retry's FOR SHARE waits for it. */
async function lockDestination(h: ApiHarness, destinationId: string): Promise<PoolClient> {
  const c = await h.db.pool.connect();
  await c.query('BEGIN');
  await c.query('SELECT 1 FROM destinations WHERE id = $1 FOR UPDATE', [destinationId]);
  return c;
}

async function release(c: PoolClient): Promise<void> {
  await c.query('ROLLBACK').catch(() => undefined);
  c.release();
}

function claimRow(h: ApiHarness, tenantId: string, key: string) {
  return h.db.pool
    .query<{ scope: string; status_code: number; request_hash: string; started: string | null }>(
      `SELECT scope, status_code, request_hash, response_body->>'started' AS started FROM idempotency_records WHERE tenant_id = $1 AND key = $2`,
      [tenantId, key],
    )
    .then((r) => r.rows[0]);
}

/** Answers `p`, or null when it has not answered within `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  return Promise.race([p, sleep(ms).then(() => null)]);
}

const STILL_RUNNING = /still being processed/;

it('a retry waiting on locks past the stale window keeps its claim: the same key answers 409 while it runs, then its 202', async () => {
  const h = fast;
  const { t, p, dlv, path } = await retryable(h);
  const headers = { 'idempotency-key': 'slow-retry-1' };
  const lock = await lockDestination(h, p.destinationId);
  let first: Promise<Awaited<ReturnType<ApiHarness['call']>>>;
  let second: Awaited<ReturnType<ApiHarness['call']>> | null;
  let late: Promise<unknown> = Promise.resolve();
  try {
    first = h.call('POST', path, { key: t.apiKey, headers });
    await waitFor(async () => (await claimRow(h, t.tenantId, headers['idempotency-key']))?.status_code === 0, { what: 'the first request to claim its key' });
    // The first request has been running for 10 minutes by its claim's creation time, and
    // it is still waiting on the lock for longer than the 3 s stale window (real time).
    await h.db.pool.query(`UPDATE idempotency_records SET created_at = created_at - interval '10 minutes' WHERE tenant_id = $1 AND key = $2`, [t.tenantId, headers['idempotency-key']]);
    await sleep(4500);
    const retried = h.call('POST', path, { key: t.apiKey, headers });
    late = retried.catch(() => undefined);
    second = await within(retried, 10_000);
  } finally {
    await release(lock);
  }
  const done = await first;
  await late;
  expect([done.status, done.body.delivery_ids]).toEqual([202, [dlv]]);
  // The client's retry was not run: it was told the first is still in progress.
  expect(second && [second.status, second.body.type, second.headers.get('idempotent-replayed')]).toEqual([409, 'https://hookline.dev/errors/conflict', null]);
  expect(second?.body.detail).toMatch(STILL_RUNNING);
  // Once the first has finished, the key answers its 202.
  const again = await h.call('POST', path, { key: t.apiKey, headers });
  expect([again.status, again.headers.get('idempotent-replayed'), again.body]).toEqual([202, 'true', done.body]);
});

it('a request judged dead while its handler runs is not run again: the retry answers 409 idempotency-outcome-unknown, and its own outcome, once stored, is the key\'s', async () => {
  const h = slow;
  const { t, p, path } = await retryable(h);
  const key = 'judged-dead-1';
  const headers = { 'idempotency-key': key };
  const lock = await lockDestination(h, p.destinationId);
  let first: Promise<Awaited<ReturnType<ApiHarness['call']>>>;
  let retry: Awaited<ReturnType<ApiHarness['call']>>;
  try {
    first = h.call('POST', path, { key: t.apiKey, headers });
    // Its handler has started (the claim is marked so just before it runs) and waits on the lock.
    await waitFor(async () => (await claimRow(h, t.tenantId, key))?.started === 'true', { what: 'the first request to start its handler' });
    // The first request is judged dead: nothing heard from it for 10 minutes (every time its claim holds).
    await h.db.pool.query(
      `UPDATE idempotency_records SET created_at = created_at - interval '10 minutes',
              response_body = jsonb_set(response_body, '{alive_at}', to_jsonb(now() - interval '10 minutes'))
        WHERE tenant_id = $1 AND key = $2`,
      [t.tenantId, key],
    );
    // Its write may have been applied: a retry does not run it again (before, it took the key over and ran).
    retry = await h.call('POST', path, { key: t.apiKey, headers });
  } finally {
    await release(lock);
  }
  expect([retry.status, retry.body.type, retry.body.idempotency_key, retry.headers.get('idempotent-replayed')]).toEqual([409, 'https://hookline.dev/errors/idempotency-outcome-unknown', key, null]);
  const done = await first;
  expect(done.status).toBe(202);
  // The claim was never taken: the first request stored its outcome, which the key now answers.
  const after = await h.call('POST', path, { key: t.apiKey, headers });
  expect([after.status, after.headers.get('idempotent-replayed'), after.body]).toEqual([202, 'true', done.body]);
});

it('a claim whose handler never started may be taken over, and its request never stores over the claim that took it', async () => {
  const h = slow;
  const t = await h.tenant();
  const key = 'taken-over-1';
  const app = h.api.context;
  // A request claimed the key and was not heard from before its handler started (never marked).
  const lost = await startIdempotent(app, t.tenantId, 'api_key:lost', key, 'hash-1');
  if (lost.kind !== 'claimed') throw new Error('not claimed');
  clearInterval(lost.heartbeat);
  await h.db.pool.query(
    `UPDATE idempotency_records SET created_at = created_at - interval '10 minutes', response_body = jsonb_set(response_body, '{alive_at}', to_jsonb(now() - interval '10 minutes'))
      WHERE tenant_id = $1 AND key = $2`,
    [t.tenantId, key],
  );
  const takeover = await startIdempotent(app, t.tenantId, 'api_key:lost', key, 'hash-1');
  if (takeover.kind !== 'claimed') throw new Error('not taken over');
  // The lost request turns up: it may not start (its claim is gone) nor store its outcome over the new claim.
  await expect(runIdempotent(app, lost, async () => ({ status: 201, body: { ran: true } }), () => ({ status: 500 }))).rejects.toMatchObject({ type: 'conflict' });
  await finishIdempotent(app, lost, 201, { ran: 'late' });
  expect((await h.db.pool.query(`SELECT status_code FROM idempotency_records WHERE tenant_id = $1 AND key = $2`, [t.tenantId, key])).rows[0].status_code).toBe(0);
  // The new claim's outcome is the one the key keeps.
  await runIdempotent(app, takeover, async () => ({ status: 202, body: { ran: 'takeover' } }), () => ({ status: 500 }));
  const replay = await startIdempotent(app, t.tenantId, 'api_key:lost', key, 'hash-1');
  expect(replay).toEqual({ kind: 'replay', status: 202, body: { ran: 'takeover' } });
});

it('heartbeats keep a claim alive while the requests hold every connection of the api pool (they beat on the claim pool)', async () => {
  const h = fast; // 3 s stale window: a beat every 750 ms
  const t = await h.tenant();
  const starved = createPool(h.db.url, 1);
  const claimPool = createPool(h.db.url, 1);
  const app = { ...h.api.context, pool: starved, claimPool };
  const aliveAt = async (key: string): Promise<number> =>
    Date.parse((await h.db.pool.query<{ a: string }>(`SELECT response_body->>'alive_at' AS a FROM idempotency_records WHERE tenant_id = $1 AND key = $2`, [t.tenantId, key])).rows[0]!.a);
  const claim = await startIdempotent(app, t.tenantId, 'api_key:starved', 'starved-1', 'hash');
  if (claim.kind !== 'claimed') throw new Error('not claimed');
  // Every connection of the api pool is taken, as by requests waiting on locks.
  const held = await starved.connect();
  try {
    const first = await aliveAt('starved-1');
    await waitFor(async () => (await aliveAt('starved-1')) > first, { what: 'a heartbeat with the api pool exhausted', timeoutMs: 4_500 });
  } finally {
    held.release();
  }
  await finishIdempotent(app, claim, 202, { ok: true });
  await Promise.all([starved.end(), claimPool.end()]);
});
