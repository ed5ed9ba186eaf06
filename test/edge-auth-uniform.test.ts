// The edge agent endpoints do not tell which cluster ids exist: every refused signed request
// gets the same answer (status, type, title, detail, headers), whether the cluster is
// unknown, not ACTIVE, or known with a stale timestamp, a wrong or rotated-out key, a missing
// or malformed header, or a replay; an unknown cluster's request is verified against as many
// (dummy) keys as a known one's; the real reason is logged, without keys or signatures.
// verifyEdgeRequest against real PostgreSQL and Redis, and the api in-process on loopback.
import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import { createLogger, type Logger } from '@hookline/logger';
import * as signing from '@hookline/signing';
import { verifyEdgeRequest } from '../services/api/src/edge/edge-auth';
import { problemReply } from '../services/api/src/http/route';
import { loadEdgeConfig } from '../services/api/src/edge/edge-config';
import { createEdgeDeps, type EdgeDeps } from '../services/api/src/edge/edge-deps';
import { startApi, type ApiHarness } from './api-harness';
import { edgePost, insertCluster, SECRETS_KEY, signEdge } from './edge-fixtures';

jest.mock('@hookline/signing', () => {
  const actual = jest.requireActual<typeof import('@hookline/signing')>('@hookline/signing');
  return { ...actual, verifyServiceSignature: jest.fn(actual.verifyServiceSignature) };
});

jest.setTimeout(60_000);

let h: ApiHarness;
let deps: EdgeDeps;
let tenantId: string;
const warned: { msg: string; meta: Record<string, unknown> }[] = [];

beforeAll(async () => {
  h = await startApi('edgeauth', { SECRETS_KEY });
  tenantId = (await h.tenant()).tenantId;
  deps = createEdgeDeps(
    { pool: h.db.pool, redis: h.redis, prefix: h.prefix, logger: createLogger('edge-auth-test', 'error'), box: h.api.context.box, draining: new AbortController().signal },
    loadEdgeConfig({ EDGE_SIGNATURE_TOLERANCE_SECONDS: '60' }),
  );
  deps.logger = { warn: (msg: string, meta: Record<string, unknown>) => warned.push({ msg, meta }) } as unknown as Logger;
});
afterAll(async () => {
  await h?.close();
});

const body = () => JSON.stringify({ agent_id: 'a', agent_version: 'v', nonce: randomBytes(8).toString('hex'), max: 0, wait_seconds: 0 });

function request(cid: string, raw: string, headers: Record<string, string>, requestId: string): Request {
  return { params: { cid }, headers, rawBody: Buffer.from(raw), res: { locals: { requestId } } } as unknown as Request;
}

/** The refusal as the client sees it (instance aside), and what was logged for it. */
async function refusal(cid: string, raw: string, headers: Record<string, string>): Promise<{ answer: unknown; log: { msg: string; meta: Record<string, unknown> } }> {
  const requestId = `req-${randomBytes(6).toString('hex')}`;
  warned.length = 0;
  const err = await verifyEdgeRequest(deps, request(cid, raw, headers, requestId)).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).not.toBeNull();
  // What the api's error middleware answers with (problem details, headers).
  const { body: problem, headers: answerHeaders } = problemReply(err, requestId) as { body: Record<string, unknown>; headers: Record<string, string> };
  expect(problem['instance']).toBe(requestId);
  expect(warned).toHaveLength(1);
  expect(warned[0]!.meta['request_id']).toBe(requestId);
  return { answer: { ...problem, instance: undefined, headers: answerHeaders }, log: warned[0]! };
}

test('every refusal is the same answer; the log says which it was, with no key or signature', async () => {
  const a = await insertCluster(h.db.pool, tenantId);
  const b = await insertCluster(h.db.pool, tenantId);
  const off = await insertCluster(h.db.pool, tenantId);
  await h.db.pool.query(`UPDATE clusters SET state = 'DISABLED' WHERE id = $1`, [off.id]);
  const broken = await insertCluster(h.db.pool, tenantId);
  await h.db.pool.query(`UPDATE clusters SET key_encrypted = 'not-sealed' WHERE id = $1`, [broken.id]);
  // A key rotated out: its grace period is over.
  const rotated = await insertCluster(h.db.pool, tenantId);
  const oldKey = rotated.key;
  const newKey = `hkc_${randomBytes(32).toString('base64url')}`;
  await h.db.pool.query(
    `UPDATE clusters SET previous_key_encrypted = key_encrypted, previous_key_expires_at = now() - interval '1 second', key_encrypted = $2 WHERE id = $1`,
    [rotated.id, h.api.context.box.seal(newKey)],
  );
  const stale = Math.floor(Date.now() / 1000) - 3600;
  const raws = Array.from({ length: 10 }, body);
  const { 'x-service-timestamp': _t, ...noTimestamp } = signEdge(a.key, raws[3]!);

  // One accepted, so that the same signed request again is a replay.
  const once = signEdge(a.key, raws[7]!);
  await expect(verifyEdgeRequest(deps, request(a.id, raws[7]!, once, 'req-ok'))).resolves.toEqual({ id: a.id, tenantId, signedWith: a.sealed });

  // One at a time: each reads the log lines written for it.
  const cases: [string, () => ReturnType<typeof refusal>][] = [];
  const add = (reason: string, cid: string, raw: string, headers: Record<string, string>) => cases.push([reason, () => refusal(cid, raw, headers)]);
  add('unknown_cluster', 'cls_00000000000000000000000000', raws[0]!, signEdge(a.key, raws[0]!));
  add('timestamp_out_of_tolerance', a.id, raws[1]!, signEdge(a.key, raws[1]!, stale));
  add('signature_mismatch', a.id, raws[2]!, signEdge(b.key, raws[2]!));
  add('missing_header', a.id, raws[3]!, noTimestamp);
  add('bad_format', a.id, raws[4]!, { 'x-service-timestamp': '1', 'x-service-signature': 'v1=abc' });
  add('cluster_not_active', off.id, raws[5]!, signEdge(off.key, raws[5]!));
  add('key_does_not_open', broken.id, raws[6]!, signEdge(broken.key, raws[6]!));
  add('replayed', a.id, raws[7]!, once);
  add('signature_mismatch', rotated.id, raws[8]!, signEdge(oldKey, raws[8]!));
  const results: [string, Awaited<ReturnType<typeof refusal>>][] = [];
  for (const [reason, run] of cases) results.push([reason, await run()]);

  const [first] = results;
  expect(first![1].answer).toMatchObject({ status: 401, type: expect.stringMatching(/\/unauthorized$/), detail: 'The cluster request could not be authenticated.', headers: { 'WWW-Authenticate': 'X-Service-Signature' } });
  for (const [reason, r] of results) {
    expect({ reason, answer: r.answer }).toEqual({ reason, answer: first![1].answer });
    expect({ reason, logged: r.log.meta['auth_failure'] }).toEqual({ reason, logged: reason });
    expect(r.log.meta['cluster_id']).toEqual(expect.stringMatching(/^cls_/));
    const line = JSON.stringify(r.log);
    for (const secret of [a.key, b.key, off.key, broken.key, oldKey, newKey]) expect(line).not.toContain(secret);
    expect(line).not.toMatch(/[0-9a-f]{64}/);
  }
  expect(results.find(([r]) => r === 'cluster_not_active')![1].log.meta['cluster_state']).toBe('DISABLED');

  // The rotated cluster's current key is accepted.
  const fresh = body();
  await expect(verifyEdgeRequest(deps, request(rotated.id, fresh, signEdge(newKey, fresh), 'req-new'))).resolves.toEqual({ id: rotated.id, tenantId, signedWith: expect.any(String) });
});

test('an unknown or inactive cluster costs the same verification as a known one: as many keys, over the same body', async () => {
  const a = await insertCluster(h.db.pool, tenantId);
  const withPrevious = await insertCluster(h.db.pool, tenantId);
  await h.db.pool.query(`UPDATE clusters SET previous_key_encrypted = key_encrypted, previous_key_expires_at = now() + interval '1 hour' WHERE id = $1`, [withPrevious.id]);
  const off = await insertCluster(h.db.pool, tenantId);
  await h.db.pool.query(`UPDATE clusters SET state = 'DISABLED' WHERE id = $1`, [off.id]);
  const verify = jest.mocked(signing.verifyServiceSignature);
  const keysTried: Record<string, number> = {};
  for (const [what, cid] of [['known', a.id], ['known, previous key in grace', withPrevious.id], ['unknown', 'cls_00000000000000000000000001'], ['disabled', off.id]] as const) {
    const raw = body();
    verify.mockClear();
    warned.length = 0;
    await verifyEdgeRequest(deps, request(cid, raw, signEdge('hkc_some-other-key', raw), 'req-x')).catch(() => undefined);
    expect(verify).toHaveBeenCalledTimes(1);
    expect(verify.mock.calls[0]![1]).toEqual(Buffer.from(raw));
    keysTried[what] = verify.mock.calls[0]![0].length;
  }
  expect(keysTried).toEqual({ known: 2, 'known, previous key in grace': 2, unknown: 2, disabled: 2 });
});

test('over HTTP: an unknown cluster and a known one with a stale signature get byte-identical answers but for the request id', async () => {
  const a = await insertCluster(h.db.pool, tenantId);
  const path = (id: string) => `/v1/edge/clusters/${id}/work`;
  const unknown = await edgePost(h.url, path('cls_00000000000000000000000002'), a.key, { max: 0, wait_seconds: 0 }, { 'x-request-id': 'req-same' });
  const stale = Math.floor(Date.now() / 1000) - 3600;
  const raw = body();
  const known = await fetch(`${h.url}${path(a.id)}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'req-same', ...signEdge(a.key, raw, stale) }, body: raw });
  expect(known.status).toBe(401);
  expect(unknown.status).toBe(401);
  expect(await known.text()).toBe(unknown.text);
});
