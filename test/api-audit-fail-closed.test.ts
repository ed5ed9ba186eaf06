// Control-API writes are audited fail closed (services/api/src/audit/audit-write.ts,
// startAudit, from http/route.ts and http/pipeline.ts; logout in auth/logout.routes.ts): the
// audit row is written before anything of the request runs, and when it cannot be nothing is
// applied (500); the outcome is recorded when the request's code ends, not when the answer
// reaches the client, so a write whose client went away is audited with its outcome too. A
// row whose end cannot be recorded keeps the unfinished outcome (server_error, no status).
// Faults: a trigger on audit_logs in this file's private schema fails the statements a table
// names; a second connection holds a row lock while the client aborts.
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertUser } from './api-fixtures';
import { installAuditFaults } from './support/audit-faults';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiauditclosed', { JWT_SECRET: 'test-audit-closed-secret-0123456789' }, { quiet: true });
  await installAuditFaults(h.db.pool);
});
afterAll(async () => {
  await h?.close();
});
afterEach(async () => {
  await h.db.pool.query('DELETE FROM audit_faults');
});

const fail = (action: string, op: 'INSERT' | 'UPDATE') => h.db.pool.query('INSERT INTO audit_faults (action, op) VALUES ($1, $2)', [action, op]);
const auditRows = async (tenantId: string, action: string) =>
  (await h.db.pool.query<{ resource_id: string | null; outcome: string; request_id: string }>('SELECT resource_id, outcome, request_id FROM audit_logs WHERE tenant_id = $1 AND action = $2 ORDER BY id', [tenantId, action])).rows;
const destinationState = async (id: string) => (await h.db.pool.query<{ state: string }>('SELECT state FROM destinations WHERE id = $1', [id])).rows[0]!.state;

it('a write whose client went away before the answer is audited with its outcome; its row is there, unfinished, while it runs', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  // Another connection holds the destination's row: the disable waits on it.
  const lock = await h.db.pool.connect();
  try {
    await lock.query('BEGIN');
    await lock.query('SELECT 1 FROM destinations WHERE id = $1 FOR UPDATE', [p.destinationId]);
    const ac = new AbortController();
    const req = fetch(`${h.url}/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { method: 'POST', headers: { 'x-api-key': t.apiKey }, signal: ac.signal }).then(
      () => 'answered',
      (e: Error) => e.name,
    );
    // Written before the write runs: while it waits, the row says it has not ended.
    const during = await waitFor(async () => (await auditRows(t.tenantId, 'destinations.disable'))[0], { what: 'the audit row written before the write' });
    expect([during.resource_id, during.outcome]).toEqual([p.destinationId, 'server_error:']);
    await sleep(200);
    ac.abort();
    expect(await req).toBe('AbortError');
    await lock.query('COMMIT');
  } finally {
    // (Rolled back when the test failed before its COMMIT: the pool must not keep the open transaction.)
    await lock.query('ROLLBACK').catch(() => undefined);
    lock.release();
  }
  await waitFor(async () => (await destinationState(p.destinationId)) === 'DISABLED', { what: 'the disable to commit' });
  const rows = await waitFor(async () => {
    const r = await auditRows(t.tenantId, 'destinations.disable');
    return r[0]?.outcome !== 'server_error:' && r;
  }, { what: 'the outcome of the abandoned write' });
  expect(rows.map((r) => [r.resource_id, r.outcome])).toEqual([[p.destinationId, 'success:200']]);
});

it('a write whose audit row cannot be written is not applied (500), and neither is a refusal run', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  await fail('destinations.disable', 'INSERT');
  const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey });
  expect([res.status, res.body.type]).toEqual([500, 'https://hookline.dev/errors/internal-error']);
  expect(await destinationState(p.destinationId)).toBe('ACTIVE');
  // With an Idempotency-Key: nothing ran, so the key was not taken either.
  const keyed = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey, headers: { 'idempotency-key': 'audit-insert-fails' } });
  expect(keyed.status).toBe(500);
  expect((await h.db.pool.query(`SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1`, [t.tenantId])).rows[0].n).toBe(0);
  expect(await auditRows(t.tenantId, 'destinations.disable')).toEqual([]);
  // A refused write (400 before anything could be applied) is refused the same way.
  await fail('destinations.create', 'INSERT');
  const refused = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'x', url: 'gopher://x' } });
  expect(refused.status).toBe(500);
  await h.db.pool.query('DELETE FROM audit_faults');
  const ok = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey });
  expect([ok.status, ok.body.state]).toEqual([200, 'DISABLED']);
  expect((await auditRows(t.tenantId, 'destinations.disable')).map((r) => [r.outcome, r.request_id])).toEqual([['success:200', ok.headers.get('x-request-id')]]);
});

it('a write whose outcome cannot be recorded keeps its answer, and its row the unfinished outcome', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  await fail('destinations.disable', 'UPDATE');
  const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey });
  expect([res.status, res.body.state]).toEqual([200, 'DISABLED']);
  expect((await auditRows(t.tenantId, 'destinations.disable')).map((r) => r.outcome)).toEqual(['server_error:']);
  // Read through the API: a server error without a status, never taken for a success.
  const list = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs?level=error`, { key: t.apiKey });
  expect(list.body.audit_logs.map((a: { action: string; status: number | null }) => [a.action, a.status])).toEqual([['destinations.disable', null]]);
});

it("a create's row names the resource it made (known only at the end); reads are not audited", async () => {
  const t = await h.tenant();
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'made', url: 'https://example.test/hook' } });
  expect(made.status).toBe(201);
  await h.call('GET', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey });
  await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey });
  const { rows } = await h.db.pool.query('SELECT action, resource_id, outcome FROM audit_logs WHERE tenant_id = $1 ORDER BY id', [t.tenantId]);
  expect(rows).toEqual([{ action: 'destinations.create', resource_id: made.body.id, outcome: 'success:201' }]);
});

it('logout is audited fail closed too: without its row nobody is logged out', async () => {
  const t = await h.tenant();
  await insertUser(h, t.tenantId, 'audited@example.test', 'correct horse');
  const login = await h.call('POST', '/auth/login', { body: { email: 'audited@example.test', password: 'correct horse' } });
  expect(login.status).toBe(200);
  const bearer = { authorization: `Bearer ${login.body.token}` };
  const works = async () => (await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { headers: bearer })).status;
  await fail('auth.logout', 'INSERT');
  expect((await h.call('POST', '/auth/logout', { headers: bearer })).status).toBe(500);
  expect(await works()).toBe(200);
  expect(await auditRows(t.tenantId, 'auth.logout')).toEqual([]);
  await h.db.pool.query('DELETE FROM audit_faults');
  expect((await h.call('POST', '/auth/logout', { headers: bearer })).status).toBe(204);
  expect(await works()).toBe(401);
  expect((await auditRows(t.tenantId, 'auth.logout')).map((r) => r.outcome)).toEqual(['success:204']);
});
