// Delivery evidence through the control API: receipts on /v1/evidence, Merkle roots, and one
// receipt with its inclusion proof, verified as a client would.
import { evidenceKey, issueReceipts, sealWindow, verifyReceipt } from '@hookline/evidence';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apievd');
});
afterAll(async () => {
  await h.close();
});

const key = () => evidenceKey(h.api.context.config.SECRETS_KEY);

/** A tenant with a delivered (two attempts) and an exhausted (three attempts) delivery, receipts issued. */
async function tenantWithReceipts() {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' });
  const delivered = await insertDelivery(h, t.tenantId, evt, p, { status: 'delivered', attempts: 2 });
  const exhausted = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' }), p, { status: 'exhausted', attempts: 3 });
  await issueReceipts(h.db.pool, key());
  return { t, evt, delivered, exhausted };
}

describe('GET /v1/evidence', () => {
  it('attaches each attempt\'s receipt, unsealed (no proof) until its window is sealed', async () => {
    const { t, delivered, exhausted } = await tenantWithReceipts();
    const res = await h.call('GET', '/v1/evidence', { key: t.apiKey });
    expect(res.status).toBe(200);
    const byDelivery = new Map(res.body.evidence.map((e: { delivery_id: string }) => [e.delivery_id, e]));
    const d = byDelivery.get(delivered) as { receipts: Array<{ receipt: Record<string, unknown>; proof: unknown; root: unknown }> };
    expect(d.receipts.map((b) => [b.receipt['attempt_number'], b.receipt['outcome'], b.proof, b.root])).toEqual([
      [1, 'failed', null, null],
      [2, 'succeeded', null, null],
    ]);
    expect((byDelivery.get(exhausted) as { receipts: unknown[] }).receipts).toHaveLength(3);
    expect(d.receipts[1]!.receipt).toMatchObject({ delivery_id: delivered, tenant_id: t.tenantId, status_code: 200, request_body_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('lists sealed roots with cursor pagination and serves a receipt with a proof that verifies', async () => {
    const { t, evt, delivered } = await tenantWithReceipts();
    const other = await h.tenant();
    const sealAll = () => sealWindow(h.db.pool, key(), t.tenantId, { start: new Date(0), end: new Date(Date.now() + 60_000) });
    const first = await sealAll();
    expect(first?.leaf_count).toBe(5);
    // A later delivery of the same tenant lands in a second root.
    await insertDelivery(h, t.tenantId, evt, await createPipeline(h, t.tenantId, t.apiKey, 'q'), { status: 'delivered', attempts: 1 });
    await issueReceipts(h.db.pool, key());
    const second = await sealAll();
    expect(second?.leaf_count).toBe(1);

    const page1 = await h.call('GET', '/v1/evidence/merkle-roots?limit=1', { key: t.apiKey });
    expect(page1.status).toBe(200);
    expect(page1.body.merkle_roots).toEqual([second]);
    const page2 = await h.call('GET', `/v1/evidence/merkle-roots?limit=1&cursor=${page1.body.next_cursor}`, { key: t.apiKey });
    expect(page2.body).toEqual({ merkle_roots: [first], next_cursor: null });
    expect((await h.call('GET', '/v1/evidence/merkle-roots', { key: other.apiKey })).body).toEqual({ merkle_roots: [], next_cursor: null });
    expect((await h.call('GET', '/v1/evidence/merkle-roots?offset=0', { key: t.apiKey })).status).toBe(400);
    expect((await h.call('GET', '/v1/evidence/merkle-roots?cursor=nope', { key: t.apiKey })).status).toBe(400);

    const listed = await h.call('GET', `/v1/evidence?event_id=${evt}`, { key: t.apiKey });
    const receiptId: string = listed.body.evidence.find((e: { delivery_id: string }) => e.delivery_id === delivered).receipts[1].receipt.id;
    const one = await h.call('GET', `/v1/evidence/receipts/${receiptId}`, { key: t.apiKey });
    expect(one.status).toBe(200);
    expect(one.body.root).toEqual(first);
    expect(verifyReceipt(one.body.receipt, one.body.proof, one.body.root, { key: key().key })).toMatchObject({ valid: true });
    // An edited receipt no longer proves inclusion.
    expect(verifyReceipt({ ...one.body.receipt, status_code: 201 }, one.body.proof, one.body.root).valid).toBe(false);

    // Another tenant's receipt does not exist for this one; the scope is read:evidence.
    expect((await h.call('GET', `/v1/evidence/receipts/${receiptId}`, { key: other.apiKey })).status).toBe(404);
    expect((await h.call('GET', '/v1/evidence/receipts/rcp_00000000000000000000000000', { key: t.apiKey })).status).toBe(404);
    const narrow = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: { name: 'no-evidence', scopes: ['read:deliveries'] } });
    const denied = await h.call('GET', '/v1/evidence/merkle-roots', { key: narrow.body.key });
    expect(denied.status).toBe(403);
    expect(denied.body.required_scope).toBe('read:evidence');

    const ready = await h.call('GET', '/v1/readiness', { key: t.apiKey });
    expect(ready.body.checks.evidence).toEqual({ ok: true, unsealed_receipts: 0, latest_root_at: second!.created_at });
  });
});
