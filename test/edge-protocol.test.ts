// The agent-facing endpoints of the api (its own process on loopback), spoken to directly
// as an agent would: signatures, leases, long-poll, idempotent reports, retries, the DLQ.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { createSecretBox } from '@hookline/signing';
import { createTestDatabase, flushPrefix, seedTenant, startReceiver, startService, uniquePrefix, waitFor, type ServiceProcess, type TestDatabase } from '@hookline/testing';
import { toSendResult } from '../services/api/src/edge/record-reports';
import { attemptsOf, deliveryRow, edgePost, insertCluster, insertEdgeDelivery, SECRETS_KEY, signEdge, startAgent } from './edge-fixtures';

jest.setTimeout(60_000);

let db: TestDatabase;
let api: ServiceProcess;
let prefix: string;
let tenantId: string;
let apiKey: string;
let cluster: { id: string; key: string };

const work = (c = cluster, payload: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  edgePost(api.url, `/v1/edge/clusters/${c.id}/work`, c.key, { max: 10, wait_seconds: 0, ...payload }, headers);
/** Long-polls until a delivery is handed out (bounded by the test timeout). */
async function nextWork(): Promise<any> {
  for (;;) {
    const got = await work(cluster, { wait_seconds: 5 });
    if (got.body.deliveries.length) return got.body.deliveries[0];
  }
}
const report = (c: { id: string; key: string }, reports: Record<string, unknown>[]) => edgePost(api.url, `/v1/edge/clusters/${c.id}/reports`, c.key, { reports });
const answer = (id: string, leaseOwner: string, statusCode: number | null, extra: Record<string, unknown> = {}) => ({
  delivery_id: id,
  lease_owner: leaseOwner,
  status_code: statusCode,
  response_body: statusCode === null ? null : 'ok',
  response_headers: statusCode === null ? null : { 'content-type': 'text/plain' },
  error_kind: statusCode === null ? 'refused' : null,
  error: statusCode === null ? 'connect ECONNREFUSED 10.20.30.40:8080' : null,
  started_at: new Date().toISOString(),
  duration_ms: 12,
  ...extra,
});

beforeAll(async () => {
  db = await createTestDatabase('edgeproto');
  prefix = uniquePrefix('edgeproto');
  const t = await seedTenant(db.pool);
  tenantId = t.tenantId;
  apiKey = t.apiKey;
  cluster = await insertCluster(db.pool, tenantId);
  api = await startService('api', {
    DATABASE_URL: db.url,
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    SECRETS_KEY,
    DB_POOL_MAX: '4',
    EDGE_LEASE_MS: '1000',
    EDGE_WORK_POLL_MS: '50',
    DELIVERY_MAX_ATTEMPTS: '2',
    RETRY_SCHEDULE_MS: '300',
  });
});

afterAll(async () => {
  await api?.stop();
  await db?.drop();
  await flushPrefix(prefix);
});

describe('signed agent requests', () => {
  it('rejects a bad signature, an expired one, a wrong or unknown cluster key and a replay with 401, leaking no delivery data', async () => {
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id, { body: Buffer.from('{"secret":"payload-bytes"}') });
    const other = await insertCluster(db.pool, tenantId);
    const stale = Math.floor(Date.now() / 1000) - 1000;
    const body = JSON.stringify({ agent_id: 'a', agent_version: 'v', nonce: 'nonce-0001', max: 10, wait_seconds: 0 });
    const raw = async (text: string, headers: Record<string, string>) => {
      const res = await fetch(`${api.url}/v1/edge/clusters/${cluster.id}/work`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });
      const out = await res.text();
      return { status: res.status, text: out, body: JSON.parse(out) };
    };
    const cases: [string, Promise<{ status: number; text: string; body: any }>][] = [
      ['bad signature', work(cluster, {}, { 'x-service-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` })],
      ['expired', raw(body, signEdge(cluster.key, body, stale))],
      ['no signature', work(cluster, {}, { 'x-service-signature': '' })],
      ['wrong cluster key', work({ id: cluster.id, key: other.key })],
      ['made-up key', work({ id: cluster.id, key: 'hkc_not-the-key-of-this-cluster' })],
      ['unknown cluster', work({ id: 'cls_00000000000000000000000000', key: cluster.key })],
    ];
    for (const [what, call] of cases) {
      const res = await call;
      expect([what, res.status]).toEqual([what, 401]);
      expect([what, res.body.type]).toEqual([what, expect.stringMatching(/unauthorized$/)]);
      // One answer for all of them, the unknown cluster included: nothing tells which ids exist.
      expect([what, res.body.detail]).toEqual([what, 'The cluster request could not be authenticated.']);
      expect(res.body.instance).toEqual(expect.any(String));
      expect(res.body).not.toHaveProperty('deliveries');
      expect(res.text).not.toContain(d.deliveryId);
      expect(res.text).not.toContain('payload-bytes');
      expect(res.text).not.toContain(Buffer.from('{"secret":"payload-bytes"}').toString('base64'));
    }
    // Nothing was leased by any of them.
    expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });

    // The same signed request twice: the second is a replay.
    const once = JSON.stringify({ agent_id: 'a', agent_version: 'v', nonce: 'nonce-replay', max: 0, wait_seconds: 0 });
    const headers: Record<string, string> = { 'content-type': 'application/json', ...signEdge(cluster.key, once) };
    const url = `${api.url}/v1/edge/clusters/${cluster.id}/work`;
    expect((await fetch(url, { method: 'POST', headers, body: once })).status).toBe(200);
    const again = await fetch(url, { method: 'POST', headers, body: once });
    // Every refusal is the same answer (edge-auth.ts): a replay is told apart only in the api's log.
    const uniform = expect.stringContaining('The cluster request could not be authenticated.');
    expect(again.status).toBe(401);
    expect(await again.text()).toEqual(uniform);
    // Respelled (a space after the comma, upper-case hex): the same signed message, still a replay.
    const [tPart, vPart] = headers['x-service-signature']!.split(',');
    const respelled = { ...headers, 'x-service-signature': `${tPart}, v1=${vPart!.slice(3).toUpperCase()}` };
    const third = await fetch(url, { method: 'POST', headers: respelled, body: once });
    expect([third.status, await third.text()]).toEqual([401, uniform]);
    // A fresh signature without X-Service-Timestamp is refused (the header is required).
    const bare = JSON.stringify({ agent_id: 'a', agent_version: 'v', nonce: 'nonce-no-timestamp', max: 0, wait_seconds: 0 });
    const { 'x-service-timestamp': _dropped, ...noTimestamp } = signEdge(cluster.key, bare);
    const fourth = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...noTimestamp }, body: bare });
    expect([fourth.status, await fourth.text()]).toEqual([401, uniform]);

    // Clean up for the other tests: lease it and report it delivered.
    const got = await work();
    const item = got.body.deliveries.find((x: { id: string }) => x.id === d.deliveryId);
    expect((await report(cluster, [answer(d.deliveryId, item.lease_owner, 200)])).status).toBe(200);
  });
});

describe('work and reports', () => {
  it('hands out a due delivery once, ready to send, and records its report exactly once', async () => {
    const body = Buffer.from('{ "amount": 100,\n  "note": "caf\u00e9" }\n');
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id, { body, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', config: { headers: { 'x-team': 'payments' } } });
    const got = await work();
    expect(got.status).toBe(200);
    expect(got.body.deliveries).toHaveLength(1);
    const item = got.body.deliveries[0];
    expect(item).toMatchObject({ id: d.deliveryId, url: 'http://10.20.30.40:8080/hook', method: 'POST', timeout_ms: 15000 });
    expect(Buffer.from(item.body_base64, 'base64').equals(body)).toBe(true);
    expect(item.headers).toMatchObject({
      'x-service-delivery-idempotency-key': d.deliveryId,
      'webhook-id': d.deliveryId,
      'content-type': 'application/json',
      'x-hookline-event-id': d.eventId,
      'x-team': 'payments',
    });
    expect(item.headers['webhook-signature']).toMatch(/^v1,/);
    expect(item.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'delivering', lease_owner: item.lease_owner });

    // Leased: a second poll does not get it.
    expect((await work()).body.deliveries).toEqual([]);

    const first = await report(cluster, [answer(d.deliveryId, item.lease_owner, 200)]);
    expect(first.body.results).toEqual([{ delivery_id: d.deliveryId, result: 'recorded', attempt: 1, status: 'delivered' }]);
    const repeated = await report(cluster, [answer(d.deliveryId, item.lease_owner, 500)]);
    expect(repeated.status).toBe(200);
    expect(repeated.body.results).toEqual([{ delivery_id: d.deliveryId, result: 'ignored', reason: 'not_leased' }]);
    expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'delivered', attempt_count: 1, lease_owner: null });
    expect(await attemptsOf(db.pool, d.deliveryId)).toEqual([{ number: 1, status_code: 200, error_kind: null, via: 'edge', response_body: 'ok' }]);
    const ev = await db.pool.query(`SELECT status FROM events WHERE id = $1`, [d.eventId]);
    expect(ev.rows[0].status).toBe('delivered');
  });

  it('a long-poll answers as soon as a delivery becomes due', async () => {
    const pending = work(cluster, { wait_seconds: 20 });
    await new Promise((r) => setTimeout(r, 300));
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id);
    const got = await pending;
    expect(got.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
    await report(cluster, [answer(d.deliveryId, got.body.deliveries[0].lease_owner, 204)]);
  });

  it('an expired lease is handed out again; the old lease\'s report is then ignored', async () => {
    // The lease is EDGE_LEASE_MS (1000 here), stretched only for timeouts beyond half of it.
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id, { config: { timeout_ms: 500 } });
    const a = (await work()).body.deliveries[0];
    expect(a.id).toBe(d.deliveryId);
    // EDGE_LEASE_MS is 1000 here.
    const b = await nextWork();
    expect(b.id).toBe(d.deliveryId);
    expect(b.lease_owner).not.toBe(a.lease_owner);
    expect(b.headers['x-service-delivery-idempotency-key']).toBe(a.headers['x-service-delivery-idempotency-key']);
    expect((await report(cluster, [answer(d.deliveryId, a.lease_owner, 200)])).body.results[0]).toMatchObject({ result: 'ignored' });
    expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0 });
    expect((await report(cluster, [answer(d.deliveryId, b.lease_owner, 200)])).body.results[0]).toMatchObject({ result: 'recorded', status: 'delivered' });
  });

  it('failures are retried on the schedule and exhausted into the DLQ, like direct attempts', async () => {
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id);
    const first = (await work()).body.deliveries[0];
    const r1 = await report(cluster, [answer(d.deliveryId, first.lease_owner, 503, { response_body: 'busy', response_headers: { 'retry-after': '0', 'x-secret': 'dropped' } })]);
    expect(r1.body.results[0]).toEqual({ delivery_id: d.deliveryId, result: 'recorded', attempt: 1, status: 'failed' });
    const row = await deliveryRow(db.pool, d.deliveryId);
    expect(row).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(row.next_attempt_at.getTime()).toBeGreaterThan(Date.now() - 1000);
    // Not due yet → not handed out until the retry delay (RETRY_SCHEDULE_MS 300) passed.
    const second = await nextWork();
    expect(second.id).toBe(d.deliveryId);
    const r2 = await report(cluster, [answer(d.deliveryId, second.lease_owner, null)]);
    expect(r2.body.results[0]).toEqual({ delivery_id: d.deliveryId, result: 'recorded', attempt: 2, status: 'exhausted' });
    expect(await attemptsOf(db.pool, d.deliveryId)).toEqual([
      { number: 1, status_code: 503, error_kind: 'http_error', via: 'edge', response_body: 'busy' },
      { number: 2, status_code: null, error_kind: 'refused', via: 'edge', response_body: null },
    ]);
    const headers = await db.pool.query(`SELECT response_headers FROM delivery_attempts WHERE delivery_id = $1 AND number = 1`, [d.deliveryId]);
    expect(headers.rows[0].response_headers).toEqual({ 'retry-after': '0' });
    const ev = await db.pool.query(`SELECT status FROM events WHERE id = $1`, [d.eventId]);
    expect(ev.rows[0].status).toBe('dlq_queued');
  });

  it("a replayed delivery's round counts from where the replay started it (round_start_attempt), in reports and in refusals at lease time", async () => {
    // DELIVERY_MAX_ATTEMPTS 2. Delivered at attempt 1, then replayed: attempts 2 and 3 are the round.
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id);
    await db.pool.query(`UPDATE deliveries SET status = 'replaying', attempt_count = 1, replay_count = 1, round_start_attempt = 1 WHERE id = $1`, [d.deliveryId]);
    const first = (await work()).body.deliveries[0];
    expect(first.id).toBe(d.deliveryId);
    expect((await report(cluster, [answer(d.deliveryId, first.lease_owner, 500)])).body.results[0]).toMatchObject({ attempt: 2, status: 'failed' });
    const second = await nextWork();
    expect((await report(cluster, [answer(d.deliveryId, second.lease_owner, 500)])).body.results[0]).toMatchObject({ attempt: 3, status: 'exhausted' });

    // Refused at lease time (its signing secret does not open): the same count.
    const c = await insertCluster(db.pool, tenantId);
    const refused = await insertEdgeDelivery(db.pool, tenantId, c.id);
    await db.pool.query('UPDATE destinations SET secrets = $2 WHERE id = $1', [refused.destinationId, [createSecretBox('not the api SECRETS_KEY at all').seal('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')]]);
    await db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 2, replay_count = 1, round_start_attempt = 1 WHERE id = $1`, [refused.deliveryId]);
    expect((await work(c)).body.deliveries).toEqual([]);
    expect(await deliveryRow(db.pool, refused.deliveryId)).toMatchObject({ status: 'exhausted', attempt_count: 3 });
  });

  it('a delivery whose payload was purged is not handed out: it goes to the DLQ as payload_missing', async () => {
    const d = await insertEdgeDelivery(db.pool, tenantId, cluster.id, { body: null });
    expect((await work()).body.deliveries).toEqual([]);
    expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'exhausted', attempt_count: 1 });
    expect(await attemptsOf(db.pool, d.deliveryId)).toEqual([expect.objectContaining({ error_kind: 'payload_missing', via: 'edge' })]);
  });

  it('a destination whose signing secret does not open (wrong SECRETS_KEY) is not handed out: signing_unavailable, retried, then the DLQ', async () => {
    const c = await insertCluster(db.pool, tenantId);
    const foreign = createSecretBox('not the api SECRETS_KEY at all').seal('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    // The first: its only secret sealed with another key. The second: a rotation whose older secret does not open.
    const only = await insertEdgeDelivery(db.pool, tenantId, c.id);
    await db.pool.query('UPDATE destinations SET secrets = $2 WHERE id = $1', [only.destinationId, [foreign]]);
    const rotated = await insertEdgeDelivery(db.pool, tenantId, c.id, { secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD' });
    await db.pool.query('UPDATE destinations SET secrets = secrets || $2::text[] WHERE id = $1', [rotated.destinationId, [foreign]]);

    expect((await work(c)).body.deliveries).toEqual([]);
    for (const d of [only, rotated]) {
      expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'failed', attempt_count: 1, lease_owner: null });
      const [attempt] = await attemptsOf(db.pool, d.deliveryId);
      expect(attempt).toEqual({ number: 1, status_code: null, error_kind: 'signing_unavailable', via: 'edge', response_body: null });
    }
    const error = await db.pool.query(`SELECT error FROM delivery_attempts WHERE delivery_id = $1`, [only.deliveryId]);
    expect(error.rows[0].error).toContain('SECRETS_KEY');
    // Retried on the schedule (RETRY_SCHEDULE_MS 300), never handed out; the last allowed attempt (2) goes to the DLQ.
    // Every poll's answer is kept and checked after the wait: waitFor retries a check that throws, so an
    // expect inside it would be swallowed by a later poll that passes.
    const polls: { status: number; deliveries: unknown }[] = [];
    await waitFor(
      async () => {
        const got = await work(c);
        polls.push({ status: got.status, deliveries: got.body?.deliveries });
        return (await deliveryRow(db.pool, only.deliveryId)).status === 'exhausted' && (await deliveryRow(db.pool, rotated.deliveryId)).status === 'exhausted';
      },
      { what: 'both deliveries to be exhausted' },
    );
    expect(polls.filter((p) => p.status !== 200 || !Array.isArray(p.deliveries) || p.deliveries.length > 0)).toEqual([]);
    for (const d of [only, rotated]) {
      expect((await attemptsOf(db.pool, d.deliveryId)).map((a) => [a.number, a.error_kind])).toEqual([[1, 'signing_unavailable'], [2, 'signing_unavailable']]);
      const ev = await db.pool.query(`SELECT status FROM events WHERE id = $1`, [d.eventId]);
      expect(ev.rows[0].status).toBe('dlq_queued');
    }
  });

  it('a delivery whose flow is DISABLED or DELETED is not handed out and uses no attempt; ACTIVE again, it is', async () => {
    const c = await insertCluster(db.pool, tenantId);
    const d = await insertEdgeDelivery(db.pool, tenantId, c.id);
    const setFlow = (state: string) => db.pool.query(`UPDATE delivery_flows SET state = $2 WHERE id = (SELECT flow_id FROM deliveries WHERE id = $1)`, [d.deliveryId, state]);
    for (const state of ['DISABLED', 'DELETED']) {
      await setFlow(state);
      expect([state, (await work(c)).body.deliveries]).toEqual([state, []]);
      expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0, lease_owner: null });
    }
    expect(await attemptsOf(db.pool, d.deliveryId)).toEqual([]);
    await setFlow('ACTIVE');
    const got = (await work(c)).body.deliveries;
    expect(got.map((x: { id: string }) => x.id)).toEqual([d.deliveryId]);
    expect((await report(c, [answer(d.deliveryId, got[0].lease_owner, 200)])).body.results[0]).toMatchObject({ result: 'recorded', status: 'delivered' });
  });

  it('refuses a report claiming signing_unavailable (only the service decides that) with 400, recording nothing', async () => {
    const c = await insertCluster(db.pool, tenantId);
    const d = await insertEdgeDelivery(db.pool, tenantId, c.id);
    const item = (await work(c)).body.deliveries[0];
    const res = await report(c, [answer(d.deliveryId, item.lease_owner, null, { error_kind: 'signing_unavailable', error: 'made up' })]);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringContaining('error_kind') })]));
    expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0, lease_owner: item.lease_owner });
    expect(await attemptsOf(db.pool, d.deliveryId)).toEqual([]);
    // Past the schema too, an agent's answerless request is never recorded as the service's verdict.
    const asRecorded = toSendResult(answer(d.deliveryId, item.lease_owner, null, { error_kind: 'signing_unavailable' }) as Parameters<typeof toSendResult>[0], 100);
    expect(asRecorded.errorKind).toBe('connect');
    expect((await report(c, [answer(d.deliveryId, item.lease_owner, 200)])).body.results[0]).toMatchObject({ result: 'recorded', status: 'delivered' });
  });

  it('only the cluster\'s own deliveries are handed out, and a report cannot touch another cluster\'s', async () => {
    const other = await insertCluster(db.pool, tenantId);
    const mine = await insertEdgeDelivery(db.pool, tenantId, other.id);
    expect((await work()).body.deliveries).toEqual([]);
    const leased = (await work(other)).body.deliveries[0];
    expect(leased.id).toBe(mine.deliveryId);
    const cross = await report(cluster, [answer(mine.deliveryId, leased.lease_owner, 200)]);
    expect(cross.body.results[0]).toMatchObject({ result: 'ignored' });
    expect(await deliveryRow(db.pool, mine.deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0 });
    await report(other, [answer(mine.deliveryId, leased.lease_owner, 200)]);
  });

  it('agent requests keep the cluster\'s status: connected, last seen, agent version, in flight', async () => {
    const c = await insertCluster(db.pool, tenantId);
    const view = async () => (await (await fetch(`${api.url}/v1/tenants/${tenantId}/clusters/${c.id}`, { headers: { 'x-api-key': apiKey } })).json()) as Record<string, unknown>;
    expect(await view()).toMatchObject({ connected: false, last_seen_at: null, in_flight: 0 });
    await insertEdgeDelivery(db.pool, tenantId, c.id);
    const got = await edgePost(api.url, `/v1/edge/clusters/${c.id}/work`, c.key, { agent_version: '9.9.9', max: 10, wait_seconds: 0 });
    expect(got.body.deliveries).toHaveLength(1);
    const seen = await view();
    expect(seen).toMatchObject({ connected: true, agent_version: '9.9.9', in_flight: 1 });
    expect(seen['last_seen_at']).toEqual(expect.any(String));
    const list = (await (await fetch(`${api.url}/v1/tenants/${tenantId}/clusters?limit=100`, { headers: { 'x-api-key': apiKey } })).json()) as { clusters: Record<string, unknown>[] };
    expect(list.clusters.find((x) => x['id'] === c.id)).toMatchObject({ connected: true, in_flight: 1 });
  });

  it('rejects a malformed body with 400 after the signature holds', async () => {
    const res = await edgePost(api.url, `/v1/edge/clusters/${cluster.id}/work`, cluster.key, { max: -1, wait_seconds: 0 });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'max' })]));
  });
});

describe('mTLS between agent and service', () => {
  // The service side as an ingress would run it: TLS terminated on 127.0.0.1 with a client
  // certificate required (signed by our CA), then plain TCP to the api.
  it('an agent with the client certificate delivers; one without it cannot connect', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hl-edge-mtls-'));
    const openssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=Edge Test CA');
    for (const [name, subject, ext] of [['server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'], ['agent', '/CN=edge-agent', 'extendedKeyUsage=clientAuth\n']] as const) {
      writeFileSync(join(dir, `${name}.ext`), ext);
      openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
      openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
    }
    const sockets = new Set<Socket>();
    const pem = (f: string): Buffer => readFileSync(join(dir, f));
    const ingress = createTlsServer({ key: pem('server.key'), cert: pem('server.crt'), ca: pem('ca.crt'), requestCert: true, rejectUnauthorized: true }, (c) => {
      const up = connect(api.port, '127.0.0.1');
      sockets.add(c).add(up);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => ingress.listen(0, '127.0.0.1', r));
    const port = (ingress.address() as { port: number }).port;
    const rx = await startReceiver();
    const c = await insertCluster(db.pool, tenantId);
    const d = await insertEdgeDelivery(db.pool, tenantId, c.id, { url: `${rx.url}/inside` });
    const env = { HOOKLINE_URL: `https://127.0.0.1:${port}`, CLUSTER_ID: c.id, CLUSTER_KEY: c.key, EDGE_CA: join(dir, 'ca.crt') };
    const without = await startAgent(env, { ready: false });
    const withCert = await startAgent({ ...env, EDGE_CLIENT_CERT: join(dir, 'agent.crt'), EDGE_CLIENT_KEY: join(dir, 'agent.key') }, { ready: false });
    try {
      await waitFor(async () => (await deliveryRow(db.pool, d.deliveryId)).status === 'delivered', { what: 'the delivery through the mTLS agent' });
      expect(rx.requests.map((r) => r.url)).toEqual(['/inside']);
      expect((await fetch(`${withCert.url}/readyz`)).status).toBe(200);
      await waitFor(() => without.output().includes('backing off'), { what: 'the agent without a certificate to be refused' });
      expect((await fetch(`${without.url}/readyz`)).status).toBe(503);
    } finally {
      await Promise.all([without.stop('SIGKILL'), withCert.stop('SIGKILL')]);
      sockets.forEach((x) => x.destroy());
      await new Promise((r) => ingress.close(r));
      await rx.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
