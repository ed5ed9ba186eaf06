// A cluster key can be revoked: POST …/clusters/{id}/rotate-key (a new key once, the old
// one valid for grace_seconds), …/disable, …/enable and DELETE, each a scoped, validated,
// audited and idempotent write, and each effective on the edge agent endpoints from the
// next request on. The api in-process on loopback (edge plugin mounted), real PostgreSQL
// and Redis.
import { signServiceRequest } from '@hookline/signing';
import { randomUUID } from 'node:crypto';
import { API_SCOPES } from '@hookline/signing';
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';
import { deliveryRow, edgePost, insertEdgeDelivery, SECRETS_KEY } from './edge-fixtures';

jest.setTimeout(60_000);

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('clslife', { SECRETS_KEY, EDGE_LEASE_MS: '1500', EDGE_WORK_POLL_MS: '50' });
});
afterAll(async () => {
  await h?.close();
});

type Tenant = Awaited<ReturnType<ApiHarness['tenant']>>;
const UNIFORM = 'The cluster request could not be authenticated.';

async function enroll(t: Tenant, name = `edge-${randomUUID()}`): Promise<{ id: string; key: string; path: string }> {
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name } });
  expect(made.status).toBe(201);
  return { id: made.body.id as string, key: made.body.hmac_key as string, path: `/v1/tenants/${t.tenantId}/clusters/${made.body.id}` };
}

/** An agent's heartbeat poll (max 0) signed with `key`. */
const poll = (id: string, key: string, payload: Record<string, unknown> = {}) =>
  edgePost(h.url, `/v1/edge/clusters/${id}/work`, key, { agent_id: 'agent-1', agent_version: 't', max: 0, wait_seconds: 0, ...payload });

/** A heartbeat signed with `key` (a fresh timestamp each: every signed request is accepted once). */
async function heartbeat(id: string, key: string): Promise<{ status: number }> {
  const raw = JSON.stringify({ agent_version: `t-${randomUUID()}` });
  const res = await fetch(`${h.url}/v1/clusters/${id}/heartbeat`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...signServiceRequest(key, raw) } });
  return { status: res.status };
}

async function expectRefused(id: string, key: string): Promise<void> {
  const res = await poll(id, key);
  expect({ status: res.status, detail: res.body?.detail, deliveries: res.body?.deliveries }).toEqual({ status: 401, detail: UNIFORM, deliveries: undefined });
}

async function expectServed(id: string, key: string): Promise<void> {
  const res = await poll(id, key);
  expect({ status: res.status, deliveries: res.body?.deliveries }).toEqual({ status: 200, deliveries: [] });
}

const rotate = (t: Tenant, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> =>
  h.call('POST', `${path}/rotate-key`, { key: t.apiKey, ...(body === undefined ? {} : { body }), headers });

const storedKey = async (id: string) =>
  (await h.db.pool.query<{ key_encrypted: string; previous_key_encrypted: string | null; previous_key_expires_at: Date | null }>('SELECT key_encrypted, previous_key_encrypted, previous_key_expires_at FROM clusters WHERE id = $1', [id])).rows[0]!;

async function auditActions(t: Tenant, resourceId: string): Promise<{ action: string; resource_id: string; params: unknown; outcome: string; status: number }[]> {
  const res = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs?limit=100`, { key: t.apiKey });
  expect(res.status).toBe(200);
  return (res.body.audit_logs as { action: string; resource_id: string; params: unknown; outcome: string; status: number }[]).filter((a) => a.resource_id === resourceId);
}

describe('POST …/clusters/{id}/rotate-key', () => {
  it('returns a new key once; the old key keeps working for grace_seconds (default 3600), then is refused', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    await expectServed(c.id, c.key);

    // No body: the defaults.
    const before = Date.now();
    const res = await rotate(t, c.path);
    expect(res.status).toBe(200);
    const next = res.body.hmac_key as string;
    expect(next).toMatch(/^hkc_[A-Za-z0-9_-]{43}$/);
    expect(next).not.toBe(c.key);
    expect(res.body).toMatchObject({ id: c.id, state: 'ACTIVE', key_rotated_at: expect.any(String), previous_key_expires_at: expect.any(String) });
    const expires = Date.parse(res.body.previous_key_expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 3600_000 - 5_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3600_000 + 5_000);
    // Stored sealed, never in clear; shown only in that response.
    expect(JSON.stringify(await storedKey(c.id))).not.toContain(next);
    const got = await h.call('GET', c.path, { key: t.apiKey });
    expect(got.body).not.toHaveProperty('hmac_key');
    expect(got.body.previous_key_expires_at).toBe(res.body.previous_key_expires_at);
    expect(JSON.stringify((await h.call('GET', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey })).body)).not.toContain(next);

    // Both keys work during the grace period, on the agent endpoints and the heartbeat alike.
    await expectServed(c.id, c.key);
    await expectServed(c.id, next);
    for (const key of [c.key, next]) expect((await heartbeat(c.id, key)).status).toBe(200);

    // The grace period ends (moved into the past rather than waited for): the old key is refused, the new one is not.
    await h.db.pool.query(`UPDATE clusters SET previous_key_expires_at = now() - interval '1 second' WHERE id = $1`, [c.id]);
    await expectRefused(c.id, c.key);
    await expectServed(c.id, next);
    expect((await heartbeat(c.id, c.key)).status).toBe(401);
    // The view shows the stored expiry, now past (acceptance follows the database's clock).
    expect(Date.parse((await h.call('GET', c.path, { key: t.apiKey })).body.previous_key_expires_at)).toBeLessThan(Date.now());
  });

  it('grace_seconds 0 revokes the old key at once; a short grace period ends by itself', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const res = await rotate(t, c.path, { grace_seconds: 0 });
    expect(res.status).toBe(200);
    expect(res.body.previous_key_expires_at).toBeNull();
    await expectRefused(c.id, c.key);
    await expectServed(c.id, res.body.hmac_key);
    expect(await storedKey(c.id)).toMatchObject({ previous_key_encrypted: null, previous_key_expires_at: null });

    const k2 = res.body.hmac_key as string;
    const again = await rotate(t, c.path, { grace_seconds: 2 });
    await expectServed(c.id, k2);
    await waitFor(async () => (await poll(c.id, k2)).status === 401, { timeoutMs: 10_000, intervalMs: 250, what: 'the 2 s grace period to end' });
    await expectServed(c.id, again.body.hmac_key);
  });

  it('keeps one previous key: rotating again during a grace period revokes the older key at once', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const k2 = (await rotate(t, c.path, { grace_seconds: 600 })).body.hmac_key as string;
    const k3 = (await rotate(t, c.path, { grace_seconds: 600 })).body.hmac_key as string;
    await expectRefused(c.id, c.key);
    await expectServed(c.id, k2);
    await expectServed(c.id, k3);
  });

  it('validates the body before anything changes (400 naming the field)', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const stored = await storedKey(c.id);
    const cases: [unknown, string][] = [
      [{ grace_seconds: -1 }, 'grace_seconds'],
      [{ grace_seconds: 7 * 24 * 3600 + 1 }, 'grace_seconds'],
      [{ grace_seconds: 1.5 }, 'grace_seconds'],
      [{ grace_seconds: '60' }, 'grace_seconds'],
      [{ grace: 60 }, 'grace'],
      [[], 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await rotate(t, c.path, body);
      expect({ body, status: res.status, type: res.body.type }).toEqual({ body, status: 400, type: expect.stringMatching(/validation-error$/) });
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
    const text = await h.call('POST', `${c.path}/rotate-key`, { key: t.apiKey, rawBody: 'grace_seconds=0', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(await storedKey(c.id)).toEqual(stored);
    await expectServed(c.id, c.key);
    // At the bound: accepted.
    expect((await rotate(t, c.path, { grace_seconds: 7 * 24 * 3600 })).status).toBe(200);
  });

  it('honours Idempotency-Key: the same request returns the same key and rotates once', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const key = `rot-${randomUUID()}`;
    const first = await rotate(t, c.path, { grace_seconds: 300 }, { 'idempotency-key': key });
    const stored = await storedKey(c.id);
    const second = await rotate(t, c.path, { grace_seconds: 300 }, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.hmac_key).toBe(first.body.hmac_key);
    expect(await storedKey(c.id)).toEqual(stored);
    // The enrollment key is still the previous one: only one rotation happened.
    await expectServed(c.id, c.key);
    const other = await rotate(t, c.path, { grace_seconds: 0 }, { 'idempotency-key': key });
    expect(other.status).toBe(409);
    expect(other.body.type).toMatch(/idempotency-conflict$/);
  });

  it('needs write:clusters, answers 404 for another tenant\'s, unknown or deleted cluster, and audits without the key', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const reader = await h.tenant({ scopes: API_SCOPES.filter((s) => s !== 'write:clusters') });
    const stranger = await h.call('POST', `/v1/tenants/${reader.tenantId}/clusters/${c.id}/rotate-key`, { key: reader.apiKey, body: {} });
    expect(stranger.status).toBe(403);
    const other = await h.tenant();
    expect((await h.call('POST', `/v1/tenants/${other.tenantId}/clusters/${c.id}/rotate-key`, { key: other.apiKey, body: {} })).status).toBe(404);
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/clusters/cls_00000000000000000000000000/rotate-key`, { key: t.apiKey, body: {} })).status).toBe(404);
    await expectServed(c.id, c.key);

    const res = await rotate(t, c.path, { grace_seconds: 0 });
    let audit: Awaited<ReturnType<typeof auditActions>> = [];
    await waitFor(async () => (audit = await auditActions(t, c.id)).some((a) => a.action === 'clusters.rotateKey'), { what: 'the audit row' });
    expect(audit.find((a) => a.action === 'clusters.rotateKey')).toMatchObject({ outcome: 'success', status: 200, params: { path: { id: c.id }, body: { grace_seconds: 0 } } });
    expect(JSON.stringify(audit)).not.toContain(res.body.hmac_key);
  });
});

describe('POST …/disable, …/enable and DELETE', () => {
  it('disable refuses the cluster\'s agents at once whatever key they hold; enable lets them in again', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const next = (await rotate(t, c.path, { grace_seconds: 600 })).body.hmac_key as string;
    const off = await h.call('POST', `${c.path}/disable`, { key: t.apiKey });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ id: c.id, state: 'DISABLED' });
    await expectRefused(c.id, c.key);
    await expectRefused(c.id, next);
    // Heartbeats too (the cluster-signed control route).
    const raw = JSON.stringify({ agent_version: 'x' });
    const { signServiceRequest } = await import('@hookline/signing');
    expect((await h.call('POST', `/v1/clusters/${c.id}/heartbeat`, { rawBody: raw, headers: { 'content-type': 'application/json', ...signServiceRequest(next, raw) } })).status).toBe(401);
    // Listed and shown as DISABLED.
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey })).body.clusters).toEqual([expect.objectContaining({ id: c.id, state: 'DISABLED' })]);

    const twice = await h.call('POST', `${c.path}/disable`, { key: t.apiKey });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ type: expect.stringMatching(/conflict$/), current_state: 'DISABLED' });

    const on = await h.call('POST', `${c.path}/enable`, { key: t.apiKey });
    expect(on.status).toBe(200);
    expect(on.body.state).toBe('ACTIVE');
    await expectServed(c.id, next);
    await expectServed(c.id, c.key);
    const onTwice = await h.call('POST', `${c.path}/enable`, { key: t.apiKey });
    expect(onTwice.status).toBe(409);
    expect(onTwice.body.current_state).toBe('ACTIVE');

    let audit: Awaited<ReturnType<typeof auditActions>> = [];
    await waitFor(async () => (audit = await auditActions(t, c.id)).length >= 6, { what: 'the audit rows' });
    expect(audit.map((a) => `${a.action} ${a.status}`).sort()).toEqual(
      ['clusters.create 201', 'clusters.disable 200', 'clusters.disable 409', 'clusters.enable 200', 'clusters.enable 409', 'clusters.rotateKey 200'].sort(),
    );
  });

  it('a destination create racing the DELETE checks the cluster under the same lock: it never attaches to a deleted cluster', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    expect((await h.call('POST', `${c.path}/disable`, { key: t.apiKey })).status).toBe(200);
    // A write in progress holds the tenant's destination name lock; the DELETE queues behind
    // it, then the create (which, checking the cluster before taking the lock, would already
    // have found it not deleted).
    const blocker = await h.db.pool.connect();
    const blockerPid = Number((await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    // Name-lock waiters blocked, directly or through other waiters, by this test's blocker:
    // api config writes of other test files wait on the same statement text, for locks of
    // their own tenants, and must not be counted.
    const waiting = async (): Promise<number> =>
      (await h.db.pool.query(
        `WITH RECURSIVE behind(pid) AS (
           SELECT $1::int
           UNION
           SELECT a.pid FROM pg_stat_activity a JOIN behind b ON b.pid = ANY (pg_blocking_pids(a.pid))
         )
         SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE pid IN (SELECT pid FROM behind) AND pid <> $1
            AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%pg_advisory_xact_lock(hashtext($1))%'`,
        [blockerPid],
      )).rows[0].n;
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`names:destination:${t.tenantId}`]);
      const del = h.call('DELETE', c.path, { key: t.apiKey });
      await waitFor(async () => (await waiting()) >= 1, { timeoutMs: 10_000, what: 'the DELETE to wait for the name lock' });
      const create = h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `d-${randomUUID()}`, url: 'http://10.20.30.40:8080/hook', cluster_id: c.id } });
      await waitFor(async () => (await waiting()) >= 2, { timeoutMs: 10_000, what: 'the create to wait behind it' });
      await blocker.query('ROLLBACK');
      const [deleted, created] = await Promise.all([del, create]);
      expect([deleted.status, created.status, created.body.errors]).toEqual([200, 422, [{ field: 'cluster_id', message: 'does not exist' }]]);
    } finally {
      blocker.release();
    }
    expect((await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE cluster_id = $1', [c.id])).rows[0].n).toBe(0);
  });

  it('DELETE: 409 while ACTIVE or still used by a destination or ingester; then DELETED, hidden, name freed, agents refused', async () => {
    const t = await h.tenant();
    const name = `edge-${randomUUID()}`;
    const c = await enroll(t, name);
    const active = await h.call('DELETE', c.path, { key: t.apiKey });
    expect(active.status).toBe(409);
    expect(active.body.current_state).toBe('ACTIVE');

    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `d-${randomUUID()}`, url: 'http://10.20.30.40:8080/hook', cluster_id: c.id } });
    expect(dst.status).toBe(201);
    const ing = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: `i-${randomUUID()}`, provider: 'generic', cluster_id: c.id } });
    expect(ing.status).toBe(201);
    expect((await h.call('POST', `${c.path}/disable`, { key: t.apiKey })).status).toBe(200);

    const used = await h.call('DELETE', c.path, { key: t.apiKey });
    expect(used.status).toBe(409);
    expect(used.body).toMatchObject({ current_state: 'DISABLED', destinations: 1, ingesters: 1, destination_ids: [dst.body.id], ingester_ids: [ing.body.id] });
    expect((await h.call('GET', c.path, { key: t.apiKey })).body.state).toBe('DISABLED');

    // A DISABLED destination still counts; a DELETED one does not.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${dst.body.id}/disable`, { key: t.apiKey })).status).toBe(200);
    expect((await h.call('DELETE', c.path, { key: t.apiKey })).body.destinations).toBe(1);
    expect((await h.call('DELETE', `/v1/tenants/${t.tenantId}/destinations/${dst.body.id}`, { key: t.apiKey })).status).toBe(200);
    expect((await h.call('PUT', `/v1/tenants/${t.tenantId}/ingesters/${ing.body.id}`, { key: t.apiKey, body: { name: ing.body.name, provider: 'generic', cluster_id: null } })).status).toBe(200);

    const gone = await h.call('DELETE', c.path, { key: t.apiKey });
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ id: c.id, state: 'DELETED' });
    expect((await h.call('GET', c.path, { key: t.apiKey })).status).toBe(404);
    expect((await h.call('DELETE', c.path, { key: t.apiKey })).status).toBe(404);
    expect((await h.call('POST', `${c.path}/enable`, { key: t.apiKey })).status).toBe(404);
    expect((await rotate(t, c.path, {})).status).toBe(404);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey })).body.clusters).toEqual([]);
    await expectRefused(c.id, c.key);
    // The name is free again; a destination cannot point at the deleted cluster.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name } })).status).toBe(201);
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `d-${randomUUID()}`, url: 'http://10.20.30.40:8080/hook', cluster_id: c.id } })).status).toBe(422);
  });
});

describe('leases held by an agent whose key is revoked', () => {
  it('its report is refused; the lease expires unreported and the delivery goes to an agent with the new key', async () => {
    const t = await h.tenant();
    const c = await enroll(t);
    const d = await insertEdgeDelivery(h.db.pool, t.tenantId, c.id);
    const leased = await edgePost(h.url, `/v1/edge/clusters/${c.id}/work`, c.key, { agent_id: 'old-agent', max: 10, wait_seconds: 0 });
    expect(leased.status).toBe(200);
    const item = leased.body.deliveries.find((x: { id: string }) => x.id === d.deliveryId);
    expect(item).toBeDefined();

    const next = (await rotate(t, c.path, { grace_seconds: 0 })).body.hmac_key as string;
    const fake = await edgePost(h.url, `/v1/edge/clusters/${c.id}/reports`, c.key, {
      agent_id: 'old-agent',
      reports: [{ delivery_id: d.deliveryId, lease_owner: item.lease_owner, status_code: 200, response_body: 'ok', response_headers: {}, error_kind: null, error: null, started_at: new Date().toISOString(), duration_ms: 1 }],
    });
    expect(fake.status).toBe(401);
    expect(await deliveryRow(h.db.pool, d.deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0 });
    // Nothing for the new agent while the lease holds; once it expires (moved into the past
    // rather than waited for: a lease covers the destination's timeout), the delivery is its.
    const held = await edgePost(h.url, `/v1/edge/clusters/${c.id}/work`, next, { agent_id: 'new-agent', max: 10, wait_seconds: 0 });
    expect(held.status).toBe(200);
    expect(held.body.deliveries).toEqual([]);
    await h.db.pool.query(`UPDATE deliveries SET lease_until = now() - interval '1 millisecond' WHERE id = $1`, [d.deliveryId]);
    const got = await edgePost(h.url, `/v1/edge/clusters/${c.id}/work`, next, { agent_id: 'new-agent', max: 10, wait_seconds: 0 });
    expect(got.status).toBe(200);
    const again = got.body.deliveries.find((x: { id: string }) => x.id === d.deliveryId);
    expect(again.lease_owner).not.toBe(item.lease_owner);
    expect((await deliveryRow(h.db.pool, d.deliveryId)).attempt_count).toBe(0);
    // The old agent's report of its stale lease stays refused, and would be ignored anyway.
    expect((await edgePost(h.url, `/v1/edge/clusters/${c.id}/reports`, c.key, { agent_id: 'old-agent', reports: [] })).status).toBe(401);
  });
});
