// What the agent may reach (EDGE_ALLOWED_TARGETS): the real agent process against the api
// in-process, a "private" service on 127.0.0.1. Refused targets are failed attempts with
// nothing sent; by default the agent still delivers to loopback. Traffic stays on loopback.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';
import { insertCluster, insertEdgeDelivery, SECRETS_KEY, startAgent, type AgentProcess } from './edge-fixtures';

jest.setTimeout(60_000);

let h: ApiHarness;
let tenantId: string;
let internal: Server;
let internalUrl: string;
const seen: string[] = [];
const agents: AgentProcess[] = [];

beforeAll(async () => {
  h = await startApi('edgetargets', { SECRETS_KEY, EDGE_WORK_POLL_MS: '100' });
  tenantId = (await h.tenant()).tenantId;
  // An internal-only service next to the agent that a tenant's destination points at.
  internal = createServer((req: IncomingMessage, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('content-type', 'application/json');
    res.end('{"db_password":"internal-s3cr3t"}');
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', () => r()));
  internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop('SIGKILL')));
  internal?.closeAllConnections();
  await new Promise<void>((r) => (internal ? internal.close(() => r()) : r()));
  await h?.close();
});

interface AttemptRow {
  status_code: number | null;
  error_kind: string | null;
  error: string | null;
  response_body: string | null;
  via: string;
}

const attempts = async (deliveryId: string): Promise<AttemptRow[]> =>
  (await h.db.pool.query<AttemptRow>(`SELECT status_code, error_kind, error, response_body, via FROM delivery_attempts WHERE delivery_id = $1 ORDER BY number`, [deliveryId])).rows;

const firstAttempt = (deliveryId: string): Promise<AttemptRow> =>
  waitFor(async () => (await attempts(deliveryId))[0] ?? null, { timeoutMs: 20_000, what: 'the attempt to be reported' });

async function agentOf(cluster: { id: string; key: string }, env: Record<string, string> = {}): Promise<AgentProcess> {
  const a = await startAgent({ HOOKLINE_URL: h.url, CLUSTER_ID: cluster.id, CLUSTER_KEY: cluster.key, ...env });
  agents.push(a);
  return a;
}

test('an agent whose EDGE_ALLOWED_TARGETS excludes 127.0.0.1 refuses a loopback target and reports it; by default the same target is delivered to', async () => {
  const cluster = await insertCluster(h.db.pool, tenantId);
  const refused = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { url: `${internalUrl}/admin/export` });

  const restricted = await agentOf(cluster, { EDGE_ALLOWED_TARGETS: '10.0.0.0/8,hooks.internal' });
  const attempt = await firstAttempt(refused.deliveryId);
  expect(attempt).toMatchObject({ via: 'edge', status_code: null, response_body: null, error: 'target 127.0.0.1 refused by the edge agent: not in EDGE_ALLOWED_TARGETS' });
  // Recorded as a failed connection, retried: the refusal is this agent's, another may deliver it.
  expect(attempt.error_kind).toBe('connect');
  expect((await h.db.pool.query(`SELECT status::text AS s FROM deliveries WHERE id = $1`, [refused.deliveryId])).rows[0].s).toBe('failed');
  expect(seen).toEqual([]);
  // The network's owners see the refusal, with the address, in the agent's own log.
  const logged = restricted.output().split('\n').filter((l) => l.includes('"target refused"')).map((l) => JSON.parse(l));
  expect(logged[0]).toMatchObject({ level: 'warn', message: 'target refused', host: '127.0.0.1', address: '127.0.0.1', reason: 'not_allowed' });
  expect(await restricted.stop('SIGTERM')).toBe(0);

  // The same destination, with an agent on the default settings: loopback is reachable. The
  // refused delivery, retried, is delivered by it too (the refusal was the other agent's).
  const delivered = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: refused.destinationId });
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() WHERE id = $1`, [refused.deliveryId]);
  await agentOf(cluster);
  expect(await firstAttempt(delivered.deliveryId)).toMatchObject({ via: 'edge', status_code: 200, error_kind: null, response_body: '{"db_password":"internal-s3cr3t"}' });
  await waitFor(async () => (await attempts(refused.deliveryId)).some((a) => a.status_code === 200), { timeoutMs: 20_000, what: 'the refused delivery to be delivered by the default agent' });
  expect(seen).toEqual(['POST /admin/export', 'POST /admin/export']);
});
