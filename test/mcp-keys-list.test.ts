// MCP key management follows the control API's list and write rules: GET
// /v1/tenants/{tid}/mcp-keys pages as every list does (limit default 20, max 100, cursor or
// offset, newest first, the same 400s), writes honour Idempotency-Key in the api's own store,
// and a revoke is one transaction. Run in the whole api on a private schema and queue prefix;
// every response is checked against the served OpenAPI document.
import { createHash, randomBytes } from 'node:crypto';
import { newId } from '@hookline/db';
import type { SeededTenant } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  // One request below provokes a 500 on purpose.
  h = await startApi('mcpkeyslist', {}, { quiet: true });
});
afterAll(async () => {
  await h.close();
});

const keys = (t: SeededTenant) => `/v1/tenants/${t.tenantId}/mcp-keys`;

/** `n` MCP keys made directly in the table, oldest first (ids sort by creation time). */
async function insertKeys(t: SeededTenant, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = newId('key');
    await h.db.pool.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes, kind) VALUES ($1, $2, $3, 'mcp_xxxx', $4, '{mcp:read:health}', 'mcp')`, [
      id, t.tenantId, `k${i}`, createHash('sha256').update(randomBytes(16)).digest('hex'),
    ]);
    ids.push(id);
  }
  return ids;
}

const ids = (body: { mcp_keys: { id: string }[] }) => body.mcp_keys.map((k) => k.id);

describe('GET /v1/tenants/{tid}/mcp-keys', () => {
  it('pages like the other lists: 20 by default, newest first, next_cursor until the end', async () => {
    const t = await h.tenant();
    const made = await insertKeys(t, 25);
    const newestFirst = [...made].reverse();
    const first = await h.call('GET', keys(t), { key: t.apiKey });
    expect(first.status).toBe(200);
    expect(ids(first.body)).toEqual(newestFirst.slice(0, 20));
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await h.call('GET', `${keys(t)}?cursor=${first.body.next_cursor}`, { key: t.apiKey });
    expect(ids(second.body)).toEqual(newestFirst.slice(20));
    expect(second.body.next_cursor).toBeNull();

    const small = await h.call('GET', `${keys(t)}?limit=10`, { key: t.apiKey });
    expect(ids(small.body)).toEqual(newestFirst.slice(0, 10));
    expect(ids((await h.call('GET', `${keys(t)}?limit=10&cursor=${small.body.next_cursor}`, { key: t.apiKey })).body)).toEqual(newestFirst.slice(10, 20));
    // Offset mode, as on the other lists.
    const offset = await h.call('GET', `${keys(t)}?limit=10&offset=20`, { key: t.apiKey });
    expect(offset.body).toMatchObject({ next_cursor: null, next_offset: null });
    expect(ids(offset.body)).toEqual(newestFirst.slice(20));
    expect((await h.call('GET', `${keys(t)}?limit=100`, { key: t.apiKey })).body).toMatchObject({ next_cursor: null });
    expect(ids((await h.call('GET', `${keys(t)}?limit=100`, { key: t.apiKey })).body)).toEqual(newestFirst);
  });

  it('pages the same for an MCP key with mcp:admin:keys, and an empty list is the same envelope', async () => {
    const t = await h.tenant();
    expect((await h.call('GET', keys(t), { key: t.apiKey })).body).toEqual({ mcp_keys: [], next_cursor: null });
    const admin = await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'admin', scopes: ['mcp:admin:keys', 'mcp:read:health'] } });
    const made = await insertKeys(t, 3);
    const page = await h.call('GET', `${keys(t)}?limit=2`, { headers: { 'x-mcp-api-key': admin.body.key } });
    expect(ids(page.body)).toEqual([made[2], made[1]]);
    const rest = await h.call('GET', `${keys(t)}?limit=2&cursor=${page.body.next_cursor}`, { headers: { 'x-mcp-api-key': admin.body.key } });
    expect(rest.body).toMatchObject({ next_cursor: null });
    expect(ids(rest.body)).toEqual([made[0], admin.body.id]);
  });

  it('refuses a bad limit, cursor or offset with the same 400 as the destination list', async () => {
    const t = await h.tenant();
    // Each list's own kind of cursor (a cursor of another list is refused as such).
    const cursorOf = (kind: 'key' | 'dst'): string => Buffer.from(newId(kind)).toString('base64url');
    for (const q of ['limit=0', 'limit=101', 'limit=ten', 'cursor=not-a-cursor', 'offset=-1', 'offset=1&cursor=']) {
      const mine = await h.call('GET', `${keys(t)}?${q}${q.endsWith('=') ? cursorOf('key') : ''}`, { key: t.apiKey });
      const theirs = await h.call('GET', `/v1/tenants/${t.tenantId}/destinations?${q}${q.endsWith('=') ? cursorOf('dst') : ''}`, { key: t.apiKey });
      expect({ q, status: mine.status, type: mine.body.type, errors: mine.body.errors }).toEqual({ q, status: 400, type: theirs.body.type, errors: theirs.body.errors });
    }
  });

  it('is documented as the other lists are: limit, cursor and offset in, next_cursor out', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const list = doc.paths['/v1/tenants/{tid}/mcp-keys'].get;
    const destinations = doc.paths['/v1/tenants/{tid}/destinations'].get;
    const query = (op: { parameters: { in: string; name: string }[] }) => op.parameters.filter((p) => p.in === 'query' && ['limit', 'cursor', 'offset'].includes(p.name));
    expect(query(list)).toEqual(query(destinations));
    const schema = list.responses['200'].content['application/json'].schema;
    expect(schema.required).toEqual(['mcp_keys', 'next_cursor']);
    expect(schema.properties.next_cursor).toEqual(destinations.responses['200'].content['application/json'].schema.properties.next_cursor);
    expect(Object.keys(list.responses)).toContain('400');
  });
});

describe('Idempotency-Key on MCP key writes', () => {
  it('a repeat of a create answers the original 201 (the key included) and creates one key', async () => {
    const t = await h.tenant();
    const headers = { 'idempotency-key': 'a2b8f7d0-mcp-create-0001' };
    const body = { name: 'agent', scopes: ['mcp:read:health'] };
    const first = await h.call('POST', keys(t), { key: t.apiKey, body, headers });
    const again = await h.call('POST', keys(t), { key: t.apiKey, body, headers });
    expect(first.status).toBe(201);
    expect({ status: again.status, body: again.body, replayed: again.headers.get('idempotent-replayed') }).toEqual({ status: 201, body: first.body, replayed: 'true' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const { rows } = await h.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId]);
    expect(rows[0].n).toBe(1);
    // Kept in the api's store, 24 h, sealed: the answer holds the key itself.
    const stored = await h.db.pool.query(`SELECT response_body::text AS b, extract(epoch FROM expires_at - created_at)::int AS ttl FROM idempotency_records WHERE tenant_id = $1 AND key = $2`, [t.tenantId, headers['idempotency-key']]);
    expect(stored.rows[0].ttl).toBe(24 * 3600);
    expect(stored.rows[0].b).not.toContain(first.body.key);
  });

  it('the same key with another body is a 409 idempotency-conflict, and nothing is created', async () => {
    const t = await h.tenant();
    const headers = { 'idempotency-key': 'mcp-create-conflict' };
    expect((await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'one' }, headers })).status).toBe(201);
    const res = await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'two' }, headers });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: expect.stringMatching(/\/idempotency-conflict$/), idempotency_key: 'mcp-create-conflict', instance: res.headers.get('x-request-id') });
    const { rows } = await h.db.pool.query(`SELECT name FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId]);
    expect(rows).toEqual([{ name: 'one' }]);
    // One store with the control API's writes: a key used for a destination create is taken.
    const used = { 'idempotency-key': 'shared-with-rest' };
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'https://example.test/hook' }, headers: used })).status).toBe(201);
    expect((await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'three' }, headers: used })).body).toMatchObject({ status: 409, idempotency_key: 'shared-with-rest' });
  });

  it('works for an MCP administrator too, replays an error outcome, and refuses a malformed key', async () => {
    const t = await h.tenant();
    const admin = await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'admin', scopes: ['mcp:admin:keys', 'mcp:read:health'] } });
    const mcp = { 'x-mcp-api-key': admin.body.key as string };
    const headers = { ...mcp, 'idempotency-key': 'by-mcp-admin' };
    const first = await h.call('POST', keys(t), { headers, body: { name: 'child', scopes: ['mcp:read:health'] } });
    const again = await h.call('POST', keys(t), { headers, body: { name: 'child', scopes: ['mcp:read:health'] } });
    expect(first.status).toBe(201);
    expect(again.body).toEqual(first.body);
    // A refusal is kept as well (here: a scope the administrator lacks), as on the control API.
    const beyond = { ...mcp, 'idempotency-key': 'beyond' };
    const refused = await h.call('POST', keys(t), { headers: beyond, body: { name: 'x', scopes: ['mcp:read:logs'] } });
    expect(refused.status).toBe(403);
    const replayed = await h.call('POST', keys(t), { headers: beyond, body: { name: 'x', scopes: ['mcp:read:logs'] } });
    // The same problem, its instance this request's id.
    expect(replayed.body).toEqual({ ...refused.body, instance: replayed.headers.get('x-request-id') });
    const bad = await h.call('POST', keys(t), { key: t.apiKey, headers: { 'idempotency-key': 'x'.repeat(256) }, body: { name: 'y' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
    // The revoke honours it too: the repeat answers the first revoke.
    const revoke = { 'idempotency-key': 'revoke-child' };
    const r1 = await h.call('DELETE', `${keys(t)}/${first.body.id}`, { key: t.apiKey, headers: revoke });
    const r2 = await h.call('DELETE', `${keys(t)}/${first.body.id}`, { key: t.apiKey, headers: revoke });
    expect(r1.status).toBe(200);
    expect({ body: r2.body, replayed: r2.headers.get('idempotent-replayed') }).toEqual({ body: r1.body, replayed: 'true' });
  });

  it('a replayed refusal carries the replaying request id in instance', async () => {
    const t = await h.tenant();
    const narrow = await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'narrow-admin', scopes: ['mcp:admin:keys', 'mcp:read:health'] } });
    const headers = { 'x-mcp-api-key': narrow.body.key as string, 'idempotency-key': 'refused-twice' };
    const body = { name: 'wide', scopes: ['mcp:read:health', 'mcp:read:logs'] };
    const first = await h.call('POST', keys(t), { headers, body });
    const again = await h.call('POST', keys(t), { headers, body });
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([403, 403, 'true']);
    expect(first.body.instance).toBe(first.headers.get('x-request-id'));
    expect(again.body.instance).toBe(again.headers.get('x-request-id'));
    expect(again.body.instance).not.toBe(first.body.instance);
  });

  it("another credential's identical create is not a replay: an MCP administrator is checked and never handed a more privileged creator's key", async () => {
    const t = await h.tenant();
    // A narrow MCP administrator: health only, and a rate limit of 5/10.
    const narrow = await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'narrow', scopes: ['mcp:admin:keys', 'mcp:read:health'], rate_limit: { per_minute: 5, burst: 10 } } });
    const mcp = { 'x-mcp-api-key': narrow.body.key as string };
    const count = async () => (await h.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId])).rows[0].n;

    // The control API's credential makes a key with scopes the administrator lacks...
    const wide = { 'idempotency-key': 'wide-create' };
    const wideBody = { name: 'wide', scopes: ['mcp:read:health', 'mcp:read:logs'] };
    const made = await h.call('POST', keys(t), { key: t.apiKey, body: wideBody, headers: wide });
    expect(made.status).toBe(201);
    // ...the administrator's identical request is checked on its own: 403, no key in the answer.
    const refused = await h.call('POST', keys(t), { headers: { ...mcp, ...wide }, body: wideBody });
    expect([refused.status, refused.body.required_scope, refused.body.key, refused.headers.get('idempotent-replayed')]).toEqual([403, 'mcp:read:logs', undefined, null]);

    // ...and one with a rate limit above the administrator's: 422, not the original 201.
    const fast = { 'idempotency-key': 'fast-create' };
    const fastBody = { name: 'fast', scopes: ['mcp:read:health'], rate_limit: { per_minute: 100, burst: 100 } };
    expect((await h.call('POST', keys(t), { key: t.apiKey, body: fastBody, headers: fast })).status).toBe(201);
    const capped = await h.call('POST', keys(t), { headers: { ...mcp, ...fast }, body: fastBody });
    expect([capped.status, capped.body.type, capped.body.key]).toEqual([422, 'https://hookline.dev/errors/unprocessable-entity', undefined]);
    expect(await count()).toBe(3);

    // A request the administrator may make: a key of its own, not the other credential's.
    const same = { 'idempotency-key': 'same-create' };
    const sameBody = { name: 'same', scopes: ['mcp:read:health'] };
    const byApi = await h.call('POST', keys(t), { key: t.apiKey, body: sameBody, headers: same });
    const byMcp = await h.call('POST', keys(t), { headers: { ...mcp, ...same }, body: sameBody });
    expect([byApi.status, byMcp.status, byMcp.headers.get('idempotent-replayed')]).toEqual([201, 201, null]);
    expect([byMcp.body.id === byApi.body.id, byMcp.body.key === byApi.body.key]).toEqual([false, false]);
    // Made by the administrator, it carries the administrator's cap.
    expect(byMcp.body.rate_limit).toMatchObject({ per_minute: 5, burst: 10 });
    expect(await count()).toBe(5);
    // Each credential's own repeat still replays its own answer.
    const again = await h.call('POST', keys(t), { headers: { ...mcp, ...same }, body: sameBody });
    expect([again.body, again.headers.get('idempotent-replayed')]).toEqual([byMcp.body, 'true']);
    expect(await count()).toBe(5);
  });

  it('is documented on every MCP key write, as on the control-API writes', async () => {
    const doc = (await h.call('GET', '/v1/openapi.json')).body;
    const header = (op: { parameters: { in: string; name: string }[] }) => op.parameters.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    const reference = header(doc.paths['/v1/tenants/{tid}/destinations'].post);
    expect(reference).toBeDefined();
    for (const [path, method] of [
      ['/v1/tenants/{tid}/mcp-keys', 'post'],
      ['/v1/tenants/{tid}/mcp-keys/{kid}', 'delete'],
      ['/v1/tenants/{tid}/mcp-keys/{kid}/tool-groups/{group}', 'put'],
      ['/v1/tenants/{tid}/mcp-keys/{kid}/tool-groups/{group}', 'delete'],
    ] as const) {
      const op = doc.paths[path][method];
      expect({ path, method, header: header(op) }).toEqual({ path, method, header: reference });
      expect({ path, method, statuses: Object.keys(op.responses) }).toEqual({ path, method, statuses: expect.arrayContaining(['400', '409']) });
    }
  });
});

describe('revoking an MCP key', () => {
  it('is one transaction: when removing its write groups fails, the key is not left revoked', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', keys(t), { key: t.apiKey, body: { name: 'doomed', scopes: ['mcp:read:health'] } });
    const kid = made.body.id as string;
    expect((await h.call('PUT', `${keys(t)}/${kid}/tool-groups/retry`, { key: t.apiKey })).status).toBe(200);
    // The second statement of the revoke fails (a trigger refuses the grant's delete).
    await h.db.pool.query(`CREATE FUNCTION refuse_grant_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'grant delete refused'; END $$`);
    await h.db.pool.query(`CREATE TRIGGER refuse_grant_delete BEFORE DELETE ON mcp_tool_grants FOR EACH ROW EXECUTE FUNCTION refuse_grant_delete()`);
    try {
      expect((await h.call('DELETE', `${keys(t)}/${kid}`, { key: t.apiKey })).status).toBe(500);
      const { rows } = await h.db.pool.query(
        `SELECT k.revoked_at, array(SELECT tool_group FROM mcp_tool_grants g WHERE g.api_key_id = k.id) AS groups FROM api_keys k WHERE k.id = $1`,
        [kid],
      );
      // Neither half applied: still live, still with its group (the key still authenticates).
      expect(rows[0]).toEqual({ revoked_at: null, groups: ['retry'] });
      expect((await h.call('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': made.body.key } })).status).toBe(200);
    } finally {
      await h.db.pool.query('DROP TRIGGER refuse_grant_delete ON mcp_tool_grants');
      await h.db.pool.query('DROP FUNCTION refuse_grant_delete()');
    }
    const revoked = await h.call('DELETE', `${keys(t)}/${kid}`, { key: t.apiKey });
    expect(revoked.body).toMatchObject({ id: kid, tool_groups: [], revoked_at: expect.any(String) });
    // A revoked key gets no write group back.
    expect((await h.call('PUT', `${keys(t)}/${kid}/tool-groups/retry`, { key: t.apiKey })).status).toBe(409);
    expect((await h.db.pool.query('SELECT count(*)::int AS n FROM mcp_tool_grants WHERE api_key_id = $1', [kid])).rows[0].n).toBe(0);
  });
});
