// An Idempotency-Key's outcome once its handler has started (services/api/src/limits/idempotency.ts):
// whatever it is, a 5xx included, it is the key's and is replayed, never run again (Stripe's
// semantics); a request stopped between its write and the record of its outcome leaves the
// key answering 409 idempotency-outcome-unknown, never running the write a second time; only
// a claim whose handler provably never started is taken over. And writes answer with the rows
// they wrote, so a read after the commit can no longer turn an applied write into a 500.
// Faults: one pool query or Prisma read made to fail as a lost connection would, a trigger
// that raises once.
import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PoolClient } from 'pg';
import { requestHash, startIdempotent } from '../services/api/src/limits/idempotency';
import { IN_FLIGHT_SQL } from '../services/api/src/edge/cluster-status';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  // The shortest stale window (1 s, a heartbeat every 250 ms): a request not heard from for it is gone.
  h = await startApi('idemoutcomes', { IDEMPOTENCY_STALE_CLAIM_MS: '1000' }, { quiet: true });
  // Fails the first update of a destination named once-* (a failure inside the handler's
  // transaction), then lets every later one through (a sequence: not rolled back with it).
  await h.db.pool.query(`
    CREATE SEQUENCE once_fault_seq;
    CREATE FUNCTION once_fault() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('once_fault_seq') = 1 THEN RAISE EXCEPTION 'injected failure'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER once_fault BEFORE UPDATE ON destinations FOR EACH ROW WHEN (NEW.name LIKE 'once-%') EXECUTE FUNCTION once_fault();
  `);
});
afterAll(async () => {
  await h?.close();
});

const LOST = () => new Error('Connection terminated unexpectedly');
const sqlOf = (a: unknown[]): string => (typeof a[0] === 'string' ? a[0] : ((a[0] as { text?: string } | undefined)?.text ?? ''));

/**
 * Makes the next query of the api's pool whose text matches fail as a lost connection would,
 * whether it runs on the pool or on a client taken from it (a transaction). Returns how many
 * failed (0 or 1) and puts everything back.
 */
function failNextQuery(match: (sql: string) => boolean, error: () => Error = LOST): { hits: () => number; restore: () => void } {
  const pool = h.db.pool as unknown as { query: (...a: unknown[]) => unknown; connect: (...a: unknown[]) => Promise<PoolClient> };
  const query = pool.query;
  const connect = pool.connect;
  let hits = 0;
  const restore = () => {
    pool.query = query;
    pool.connect = connect;
  };
  pool.query = (...a: unknown[]) => {
    if (hits === 0 && match(sqlOf(a))) {
      hits++;
      return Promise.reject(error());
    }
    return query.apply(h.db.pool, a);
  };
  pool.connect = (...a: unknown[]) => {
    // pool.query takes its client with a callback (and is wrapped above): left as it is.
    if (typeof a[0] === 'function') return connect.apply(h.db.pool, a);
    return connect.apply(h.db.pool, a).then(wrapped);
  };
  const wrapped = (client: PoolClient): PoolClient => {
    const own = client.query;
    const release = client.release;
    (client as unknown as { query: (...q: unknown[]) => unknown }).query = (...q: unknown[]) => {
      if (hits === 0 && match(sqlOf(q))) {
        hits++;
        return Promise.reject(error());
      }
      return (own as (...x: unknown[]) => unknown).apply(client, q);
    };
    client.release = (...r: Parameters<PoolClient['release']>) => {
      client.query = own;
      client.release = release;
      return release.apply(client, r);
    };
    return client;
  };
  return { hits: () => hits, restore };
}

/** Makes the next call of a Prisma read (`prisma.<model>.<method>`) fail as a lost connection would. */
function failNextPrisma(model: 'delivery' | 'destination' | 'cluster', method: 'findFirst'): { hits: () => number; restore: () => void } {
  const delegate = h.prisma[model] as unknown as Record<string, (...a: unknown[]) => unknown>;
  const own = delegate[method]!;
  let hits = 0;
  const restore = () => {
    delegate[method] = own;
  };
  delegate[method] = (...a: unknown[]) => {
    if (hits === 0) {
      hits++;
      restore();
      return Promise.reject(LOST());
    }
    return own.apply(delegate, a);
  };
  return { hits: () => hits, restore };
}

async function heartbeat(clusterId: string, key: string): Promise<number> {
  const t = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ agent_version: `v-${Math.random()}` });
  const sig = createHmac('sha256', key).update(`${t}.${body}`).digest('hex');
  const res = await fetch(`${h.url}/v1/clusters/${clusterId}/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-timestamp': String(t), 'x-service-signature': `t=${t},v1=${sig}` },
    body,
  });
  await res.text();
  return res.status;
}

const claimOf = async (tenantId: string, key: string) =>
  (await h.db.pool.query<{ status_code: number; started: string | null }>(`SELECT status_code, response_body->>'started' AS started FROM idempotency_records WHERE tenant_id = $1 AND key = $2`, [tenantId, key])).rows[0];

describe('a 5xx once the handler has started', () => {
  it('is the key\'s answer: the retry gets it replayed and nothing runs again; a new key runs', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'once-target', url: 'https://example.test/hook' } });
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const headers = { 'idempotency-key': 'patch-5xx-1' };
    const first = await h.call('PATCH', path, { key: t.apiKey, body: { name: 'once-renamed' }, headers });
    expect([first.status, first.body.type]).toEqual([500, 'https://hookline.dev/errors/internal-error']);
    expect(await claimOf(t.tenantId, headers['idempotency-key'])).toEqual({ status_code: 500, started: null });
    // The retry would succeed now (the fault fires once), but it is not run: the 500 is replayed.
    const again = await h.call('PATCH', path, { key: t.apiKey, body: { name: 'once-renamed' }, headers });
    expect([again.status, again.headers.get('idempotent-replayed'), again.body.type, again.body.instance]).toEqual([500, 'true', first.body.type, again.headers.get('x-request-id')]);
    expect((await h.db.pool.query('SELECT name FROM destinations WHERE id = $1', [made.body.id])).rows[0].name).toBe('once-target');
    // After checking the resource, a new key runs the write.
    const fresh = await h.call('PATCH', path, { key: t.apiKey, body: { name: 'once-renamed' }, headers: { 'idempotency-key': 'patch-5xx-2' } });
    expect([fresh.status, fresh.body.name]).toEqual([200, 'once-renamed']);
  });

  it('rotate-key answers from the row it wrote: a failing status read rolls the rotation back, and the retry under the key replays the 500 instead of rotating again', async () => {
    const t = await h.tenant();
    const created = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: 'edge-1' } });
    expect(created.status).toBe(201);
    const cid = created.body.id as string;
    const k0 = created.body.hmac_key as string;
    expect(await heartbeat(cid, k0)).toBe(200);
    const path = `/v1/tenants/${t.tenantId}/clusters/${cid}/rotate-key`;
    const headers = { 'idempotency-key': 'rotate-read-fails' };
    const fault = failNextQuery((sql) => sql === IN_FLIGHT_SQL);
    let first;
    try {
      first = await h.call('POST', path, { key: t.apiKey, headers, body: { grace_seconds: 3600 } });
    } finally {
      fault.restore();
    }
    expect([fault.hits(), first.status]).toEqual([1, 500]);
    // Nothing rotated: the read ran in the rotation's transaction.
    const row = async () => (await h.db.pool.query('SELECT key_rotated_at, previous_key_encrypted FROM clusters WHERE id = $1', [cid])).rows[0];
    expect(await row()).toEqual({ key_rotated_at: null, previous_key_encrypted: null });
    const again = await h.call('POST', path, { key: t.apiKey, headers, body: { grace_seconds: 3600 } });
    expect([again.status, again.headers.get('idempotent-replayed'), again.body.hmac_key]).toEqual([500, 'true', undefined]);
    expect(await row()).toEqual({ key_rotated_at: null, previous_key_encrypted: null });
    // A new key rotates once; the enrollment key keeps its grace period.
    const rotated = await h.call('POST', path, { key: t.apiKey, headers: { 'idempotency-key': 'rotate-read-fails-2' }, body: { grace_seconds: 3600 } });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ id: cid, state: 'ACTIVE', in_flight: 0, previous_key_expires_at: expect.any(String), key_rotated_at: expect.any(String) });
    expect([await heartbeat(cid, rotated.body.hmac_key), await heartbeat(cid, k0)]).toEqual([200, 200]);
  });
});

describe('a 503 (nothing applied)', () => {
  it('releases the key: the retry under it runs, as Retry-After asks', async () => {
    const t = await h.tenant();
    const created = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: 'edge-503' } });
    const cid = created.body.id as string;
    const path = `/v1/tenants/${t.tenantId}/clusters/${cid}/rotate-key`;
    const headers = { 'idempotency-key': 'rotate-unreachable' };
    // The database unreachable inside the rotation's transaction: rolled back whole.
    const fault = failNextQuery((sql) => sql === IN_FLIGHT_SQL, () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    let first;
    try {
      first = await h.call('POST', path, { key: t.apiKey, headers, body: { grace_seconds: 3600 } });
    } finally {
      fault.restore();
    }
    expect([fault.hits(), first.status, first.body.type, first.headers.get('retry-after')]).toEqual([1, 503, 'https://hookline.dev/errors/service-unavailable', '2']);
    expect(await claimOf(t.tenantId, headers['idempotency-key'])).toBeUndefined();
    const again = await h.call('POST', path, { key: t.apiKey, headers, body: { grace_seconds: 3600 } });
    expect([again.status, again.headers.get('idempotent-replayed'), typeof again.body.hmac_key]).toEqual([200, null, 'string']);
    // Its answer is now the key's.
    const replayed = await h.call('POST', path, { key: t.apiKey, headers, body: { grace_seconds: 3600 } });
    expect([replayed.status, replayed.headers.get('idempotent-replayed'), replayed.body.hmac_key]).toEqual([200, 'true', again.body.hmac_key]);
  });
});

describe('writes answer with the rows they wrote (no read after the commit)', () => {
  it('a destination disable: a failing read after the commit cannot turn it into a 500', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const headers = { 'idempotency-key': 'disable-1' };
    const fault = failNextPrisma('destination', 'findFirst');
    let res;
    try {
      res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey, headers });
    } finally {
      fault.restore();
    }
    expect([res.status, res.body.id, res.body.state]).toEqual([200, p.destinationId, 'DISABLED']);
    const again = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey, headers });
    expect([again.status, again.headers.get('idempotent-replayed'), again.body]).toEqual([200, 'true', res.body]);
    // As the destination reads now.
    const read = await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}`, { key: t.apiKey });
    expect(res.body).toEqual(read.body);
  });

  it('a single replay answers the delivery as replayed, read or not', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 1 });
    const headers = { 'idempotency-key': 'replay-one-1' };
    const fault = failNextPrisma('delivery', 'findFirst');
    let res;
    try {
      res = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey, headers });
    } finally {
      fault.restore();
    }
    expect([res.status, res.body.id, res.body.status, res.body.replay_count]).toEqual([202, dlv, 'replaying', 1]);
    const again = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey, headers });
    expect([again.status, again.headers.get('idempotent-replayed'), again.body]).toEqual([202, 'true', res.body]);
    const read = await h.call('GET', `/v1/deliveries/${dlv}`, { key: t.apiKey });
    expect(res.body).toEqual(read.body);
  });

  it('an MCP key create: the retry under the key answers the same key, and one key is made', async () => {
    const t = await h.tenant();
    const headers = { 'idempotency-key': 'mcp-create-1' };
    const fault = failNextQuery((sql) => sql.includes('FROM api_keys k JOIN tenants t') && sql.includes('k.id = $2'));
    let first;
    try {
      first = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, headers, body: { name: 'agent' } });
    } finally {
      fault.restore();
    }
    expect([first.status, first.body.name, first.body.tool_groups, typeof first.body.key]).toEqual([201, 'agent', [], 'string']);
    const again = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, headers, body: { name: 'agent' } });
    expect([again.status, again.headers.get('idempotent-replayed'), again.body]).toEqual([201, 'true', first.body]);
    const { rows } = await h.db.pool.query(`SELECT id FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId]);
    expect(rows.map((r) => r.id)).toEqual([first.body.id]);
    const listed = await h.call('GET', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey });
    expect(listed.body.mcp_keys).toEqual([(({ key: _key, ...rest }) => rest)(first.body)]);
  });
});

describe('a request stopped before its outcome was recorded', () => {
  it('is never run again under its key: once not heard from, the retry answers 409 idempotency-outcome-unknown', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
      ids.push(await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 1, at: new Date(Date.now() - 60_000 + i) }));
    }
    const headers = { 'idempotency-key': 'bulk-outcome-lost' };
    const body = { status: 'exhausted', limit: 1 };
    // The replay commits; storing its outcome fails (as if the process died right there).
    const fault = failNextQuery((sql) => sql.startsWith('UPDATE idempotency_records SET status_code'));
    let first;
    try {
      first = await h.call('POST', '/v1/replay', { key: t.apiKey, headers, body });
    } finally {
      fault.restore();
    }
    expect([fault.hits(), first.status, first.body.delivery_ids]).toEqual([1, 202, [ids[0]]]);
    // While it may still be running: still being processed.
    const soon = await h.call('POST', '/v1/replay', { key: t.apiKey, headers, body });
    expect([soon.status, soon.body.type, soon.body.detail]).toEqual([409, 'https://hookline.dev/errors/conflict', expect.stringMatching(/still being processed/)]);
    await sleep(1500); // IDEMPOTENCY_STALE_CLAIM_MS = 1000
    const retry = await h.call('POST', '/v1/replay', { key: t.apiKey, headers, body });
    expect(retry.status).toBe(409);
    expect(retry.body).toEqual({
      type: 'https://hookline.dev/errors/idempotency-outcome-unknown',
      title: 'Idempotency Outcome Unknown',
      status: 409,
      detail: 'The first request with this Idempotency-Key stopped before its outcome was recorded; it may have been applied. Check the resource, then retry with a new key.',
      idempotency_key: 'bulk-outcome-lost',
      instance: retry.headers.get('x-request-id'),
    });
    // The second delivery was not replayed by a second run.
    const { rows } = await h.db.pool.query(`SELECT id, status FROM deliveries WHERE id = ANY($1) ORDER BY id`, [ids]);
    expect(rows.map((r) => [r.id, r.status])).toEqual([
      [ids[0], 'replaying'],
      [ids[1], 'exhausted'],
    ]);
    // A new key runs.
    const fresh = await h.call('POST', '/v1/replay', { key: t.apiKey, headers: { 'idempotency-key': 'bulk-outcome-lost-2' }, body });
    expect([fresh.status, fresh.body.delivery_ids]).toEqual([202, [ids[1]]]);
  });

  it('a claim whose handler never started is taken over once not heard from: the retry runs', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'failed', attempts: 1 });
    const path = `/v1/tenants/${t.tenantId}/events/${evt}/retry`;
    const key = 'claimed-never-started';
    // A request that claimed the key and died before its handler ran (its claim was never marked started).
    const claim = await startIdempotent(h.api.context, t.tenantId, `api_key:${t.apiKeyId}`, key, requestHash('post', path, null));
    if (claim.kind !== 'claimed') throw new Error('not claimed');
    clearInterval(claim.heartbeat);
    expect(await claimOf(t.tenantId, key)).toEqual({ status_code: 0, started: 'false' });
    await sleep(1500);
    const res = await h.call('POST', path, { key: t.apiKey, headers: { 'idempotency-key': key } });
    expect([res.status, res.body.delivery_ids, res.headers.get('idempotent-replayed')]).toEqual([202, [dlv], null]);
    expect(await claimOf(t.tenantId, key)).toEqual({ status_code: 202, started: null });
  });
});
