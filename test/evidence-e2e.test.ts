// Issue 8 end to end: the four services as processes on loopback. An event is delivered, the
// api's sealer issues its receipt and seals it into a Merkle root, and a client fetches the
// receipt with its proof through the API and verifies it (in code and with the CLI); an
// agent lists and calls MCP tools on the running api with a key created through the API.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { evidenceKey, verifyReceipt, type EvidenceBundle } from '@hookline/evidence';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { apiClient, createStack, postEvent, seedTenant, type Stack } from './support/stack';

jest.setTimeout(120_000);

const ROOT = resolve(__dirname, '..');
let stack: Stack;
let rx: Receiver;
let dir: string;

beforeAll(async () => {
  // Short windows: a receipt is sealed about a second after its attempt.
  stack = await createStack('evde2e', { EVIDENCE_SEAL_INTERVAL_MS: '200', EVIDENCE_WINDOW_MS: '1000', EVIDENCE_SEAL_GRACE_MS: '100' });
  rx = await startReceiver();
  dir = await mkdtemp(join(tmpdir(), 'hookline-evidence-'));
});

afterAll(async () => {
  await rx?.close();
  await stack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `pnpm evidence:verify <file>` as a user would run it: exit code and output. */
async function verifyCli(file: string, env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  const childEnv = { ...process.env, ...env };
  if (!env['SECRETS_KEY']) delete childEnv['SECRETS_KEY'];
  delete childEnv['EVIDENCE_KEY'];
  try {
    const { stdout } = await promisify(execFile)('pnpm', ['-s', 'evidence:verify', file], { cwd: ROOT, env: childEnv });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

test('a delivered event gets a receipt sealed into a Merkle root, and its proof verifies through the API and the CLI', async () => {
  const tenant = await seedTenant(stack.db.pool, { plan: 'pro' });
  const api = apiClient(stack.services.api!.url, tenant);
  const ing = await api.ingester();
  await api.flow(ing.id, (await api.destination(`${rx.url}/hooks`)).id);
  const sent = await postEvent(ing.hook_url, '{"type":"order.paid","data":{"id":7}}');
  expect(sent.status).toBe(202);
  const eventId: string = sent.body.event_id;
  await waitFor(async () => (await api.deliveriesOf(eventId))[0]?.status === 'delivered', { what: 'delivery', timeoutMs: 30_000 });

  // The sealer runs inside the api process: wait until the receipt has a proof.
  const listing = await waitFor(
    async () => {
      const r = await api.call('GET', `/v1/evidence?event_id=${eventId}`);
      return r.body?.evidence?.[0]?.receipts?.[0]?.proof ? r.body : null;
    },
    { what: 'a sealed receipt', timeoutMs: 30_000 },
  );
  const [item] = listing.evidence;
  expect(item.receipts).toHaveLength(1);
  const receiptId: string = item.receipts[0].receipt.id;
  expect(item.receipts[0].receipt).toMatchObject({ event_id: eventId, delivery_id: item.delivery_id, outcome: 'succeeded', status_code: 200, destination_origin: rx.url });

  const bundle = (await api.call('GET', `/v1/evidence/receipts/${receiptId}`)).body as EvidenceBundle;
  const roots = await api.call('GET', '/v1/evidence/merkle-roots');
  expect(roots.body.merkle_roots).toContainEqual(bundle.root);
  const key = evidenceKey(stack.env['SECRETS_KEY']!);
  expect(verifyReceipt(bundle.receipt, bundle.proof!, bundle.root!, { key: key.key })).toMatchObject({ valid: true });
  expect(verifyReceipt(bundle.receipt, bundle.proof!, bundle.root!, { key: evidenceKey('another-secrets-key-0123456789abc').key }).valid).toBe(false);

  // The CLI on the saved answers: the one receipt, the /v1/evidence page, and a tampered copy.
  const one = join(dir, 'receipt.json');
  const page = join(dir, 'evidence.json');
  const tampered = join(dir, 'tampered.json');
  await writeFile(one, JSON.stringify(bundle));
  await writeFile(page, JSON.stringify(listing));
  await writeFile(tampered, JSON.stringify({ ...bundle, receipt: { ...bundle.receipt, status_code: 500 } }));
  const [ok, ofPage, bad] = await Promise.all([verifyCli(one, { SECRETS_KEY: stack.env['SECRETS_KEY']! }), verifyCli(page), verifyCli(tampered)]);
  expect(ok).toMatchObject({ code: 0, out: expect.stringContaining(`ok   ${receiptId}`) });
  expect(ok.out).toContain('HMACs checked');
  expect(ofPage).toMatchObject({ code: 0, out: expect.stringContaining(`ok   ${receiptId}`) });
  expect(bad).toMatchObject({ code: 1, out: expect.stringContaining(`FAIL ${receiptId}: leaf_hash_matches_receipt failed`) });
});

test('an agent lists and calls MCP tools on the running api with a key created through the API', async () => {
  const tenant = await seedTenant(stack.db.pool);
  const api = apiClient(stack.services.api!.url, tenant);
  const made = await api.call('POST', `/v1/tenants/${tenant.tenantId}/mcp-keys`, { name: 'e2e-agent' });
  expect(made.status).toBe(201);

  const client = new Client({ name: 'hookline-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.services.api!.url}/v1/mcp`), { requestInit: { headers: { 'X-MCP-API-Key': made.body.key } } });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['get_capabilities', 'get_evidence', 'list_merkle_evidence_refs', 'list_runtime_proofs', 'retry_event']));
    const health = await client.callTool({ name: 'get_health', arguments: {} });
    expect(health.structuredContent).toMatchObject({ status: 'ok', service: 'hookline-api' });
    const write = await client.callTool({ name: 'retry_event', arguments: { event_id: 'evt_00000000000000000000000000' } });
    expect(write.isError).toBe(true);
    expect(write._meta?.['hookline/problem']).toMatchObject({ status: 403, tool_group: 'retry' });
  } finally {
    await client.close();
  }
  // Without a key the endpoint answers 401.
  const bare = new Client({ name: 'hookline-e2e', version: '1.0.0' });
  await expect(bare.connect(new StreamableHTTPClientTransport(new URL(`${stack.services.api!.url}/v1/mcp`)))).rejects.toThrow(/401/);
});
