// A cursor does not change what an id names: get_evidence and GET /v1/mcp/evidence/{id}
// answer 404 for another tenant's id, an unknown one or one without receipts, with a cursor
// as without, and 400 (field cursor) for a well-formed cursor naming a receipt that is not in
// this id's list (one the list did not issue). A cursor of the list's own last receipt is the
// empty last page, as before.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { newId } from '@hookline/db';
import { callTool as call, startMcp, twoTenantsWithKey, type McpHarness, type TenantData } from './mcp-harness';
import { insertDestination } from './router-fixtures';

let h: McpHarness;
let mine: TenantData;
let theirs: TenantData;
let client: Client;
let headers: Record<string, string>;

beforeAll(async () => {
  h = await startMcp('mcpevcursor');
  ({ mine, theirs, client, headers } = await twoTenantsWithKey(h, ['mcp:read:evidence']));
});
afterAll(async () => {
  await h.close();
});

const cursorOf = (receiptId: string) => Buffer.from(receiptId, 'utf8').toString('base64url');
const receiptsOf = async (deliveryId: string) =>
  (await h.db.pool.query<{ id: string }>('SELECT id FROM evidence_receipts WHERE delivery_id = $1 ORDER BY started_at, attempt_number, id', [deliveryId])).rows.map((r) => r.id);

/** The answer of both surfaces, which must agree: [status, body]. */
async function both(id: string, cursor: string): Promise<[number, any]> {
  const tool = await call(client, 'get_evidence', { id, cursor });
  const rest = await h.http('GET', `/v1/mcp/evidence/${id}?cursor=${cursor}`, { headers });
  expect([id, tool.isError ? tool.body.status : 200]).toEqual([id, rest.status]);
  return [rest.status, rest.body];
}

test("with a cursor, another tenant's id, an unknown id and one without receipts are still 404", async () => {
  const idle = await insertDestination(h.db.pool, mine.tenant.tenantId);
  const own = cursorOf((await receiptsOf(mine.deliveredId))[0]!);
  const foreign = cursorOf((await receiptsOf(theirs.deliveredId))[0]!);
  const unknown = cursorOf(newId('rcp'));
  for (const id of [theirs.deliveredId, theirs.destinationId, theirs.ingesterId, theirs.eventId, newId('dlv'), newId('flw'), idle]) {
    for (const cursor of [own, foreign, unknown]) {
      const [status, body] = await both(id, cursor);
      expect([id, cursor, status, body.type]).toEqual([id, cursor, 404, 'https://hookline.dev/errors/not-found']);
    }
  }
});

test("a cursor naming a receipt outside the id's list is a 400 cursor; the list's own last receipt gives the empty last page", async () => {
  const [first, second] = await receiptsOf(mine.exhaustedId);
  const [delivered] = await receiptsOf(mine.deliveredId);
  const cases: [string, string][] = [
    // Another delivery's receipt, another tenant's, one that does not exist.
    [mine.exhaustedId, delivered!],
    [mine.exhaustedId, (await receiptsOf(theirs.exhaustedId))[0]!],
    [mine.exhaustedId, newId('rcp')],
    // The ingester reaches both deliveries; a destination only its own.
    [mine.destinationId, delivered!],
    [mine.ingesterId, (await receiptsOf(theirs.deliveredId))[0]!],
  ];
  for (const [id, receipt] of cases) {
    const [status, body] = await both(id, cursorOf(receipt));
    expect([id, receipt, status, body.errors]).toEqual([id, receipt, 400, [{ field: 'cursor', message: expect.any(String) }]]);
  }
  // Its own receipts continue the list, up to the empty last page.
  expect(await both(mine.exhaustedId, cursorOf(first!))).toEqual([200, expect.objectContaining({ receipts: [expect.objectContaining({ receipt: expect.objectContaining({ id: second }) })], has_more: false })]);
  expect(await both(mine.exhaustedId, cursorOf(second!))).toEqual([200, { resource_id: mine.exhaustedId, receipts: [], next_cursor: null, has_more: false }]);
  const ofIngester = await call(client, 'get_evidence', { id: mine.ingesterId, limit: 1 });
  expect(ofIngester.body.has_more).toBe(true);
  expect((await both(mine.ingesterId, ofIngester.body.next_cursor))[0]).toBe(200);
});
