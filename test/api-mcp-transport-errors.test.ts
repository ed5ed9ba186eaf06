// The MCP transport's own refusals on POST /v1/mcp (Accept, Content-Type, malformed JSON-RPC,
// protocol version) answer RFC 9457 problem details with the request id in `instance`, as
// every other error of the api; valid MCP requests are answered as before.
import type { SeededTenant } from '@hookline/testing';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';

let h: ApiHarness;
let t: SeededTenant;
let mcpKey: string;
const BOTH = 'application/json, text/event-stream';

beforeAll(async () => {
  h = await startApi('mcptransport');
  t = await h.tenant();
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'agent', scopes: ['mcp:read:health'] } });
  mcpKey = made.body.key;
});
afterAll(async () => {
  await h.close();
});

const rpc = (headers: Record<string, string>, body: unknown): Promise<ApiResponse> => h.call('POST', '/v1/mcp', { headers: { 'x-mcp-api-key': mcpKey, ...headers }, body });
const toolsList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

function expectProblem(res: ApiResponse, status: number, type: string): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: `https://hookline.dev/errors/${type}`, status, title: expect.any(String), detail: expect.any(String), instance: res.headers.get('x-request-id') });
  expect(res.body.instance).toMatch(/^req_/);
  expect(res.body).not.toHaveProperty('jsonrpc');
}

test('an Accept without application/json and text/event-stream is a 406 problem; with both, the same request is answered', async () => {
  for (const accept of [undefined, 'application/json', 'text/event-stream', '*/*']) {
    const res = await rpc(accept ? { accept } : {}, toolsList);
    expectProblem(res, 406, 'not-acceptable');
    expect(res.body).toMatchObject({ title: 'Not Acceptable', detail: expect.stringMatching(/application\/json and text\/event-stream/) });
    // The rate-limit headers of the request are kept.
    expect(res.headers.get('x-ratelimit-scope')).toEqual(expect.any(String));
  }
  const ok = await rpc({ accept: BOTH }, toolsList);
  expect(ok.status).toBe(200);
  expect(ok.headers.get('content-type')).toMatch(/^application\/json/);
  expect(ok.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: { tools: expect.any(Array) } });
  // A JSON-RPC error of a valid request stays a JSON-RPC answer (HTTP 200).
  const unknown = await rpc({ accept: BOTH }, { jsonrpc: '2.0', id: 2, method: 'nope' });
  expect(unknown.status).toBe(200);
  expect(unknown.body).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'Method not found' } });
});

test('a body sent as anything but application/json is a 415 problem', async () => {
  const res = await h.call('POST', '/v1/mcp', { headers: { 'x-mcp-api-key': mcpKey, accept: BOTH, 'content-type': 'text/plain' }, rawBody: JSON.stringify(toolsList) });
  expectProblem(res, 415, 'unsupported-media-type');
});

test('a body that is not JSON-RPC, too large a batch or an unsupported MCP-Protocol-Version is a 400 validation-error problem', async () => {
  const notRpc = await rpc({ accept: BOTH }, { hello: 1 });
  expectProblem(notRpc, 400, 'validation-error');
  expect(notRpc.body.errors).toEqual([{ field: 'body', message: expect.stringMatching(/Invalid JSON-RPC message/) }]);

  const batch = await rpc({ accept: BOTH }, Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', method: 'notifications/ping', params: { i } })));
  expectProblem(batch, 400, 'validation-error');

  const version = await rpc({ accept: BOTH, 'mcp-protocol-version': '1999-01-01' }, toolsList);
  expectProblem(version, 400, 'validation-error');
  expect(version.body.errors).toEqual([{ field: 'MCP-Protocol-Version', message: expect.stringMatching(/Unsupported protocol version: 1999-01-01/) }]);
  // Malformed JSON was a problem already (the body parser); it stays one.
  const bad = await h.call('POST', '/v1/mcp', { headers: { 'x-mcp-api-key': mcpKey, accept: BOTH, 'content-type': 'application/json' }, rawBody: '{bad' });
  expectProblem(bad, 400, 'validation-error');
});
