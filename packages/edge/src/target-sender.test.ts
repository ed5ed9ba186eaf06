// The sender under the target policy, against a receiver on 127.0.0.1 (names resolve through
// a stub resolver: no DNS, no traffic off loopback).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WorkItem } from '@hookline/delivery/src/wire';
import { createTargetGuard } from './target-guard';
import { parseTargetPolicy } from './target-policy';
import { createTargetSender, type TargetSender } from './target-sender';

let server: Server;
let port: number;
let connections = 0;
let requests: string[] = [];
const senders: TargetSender[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === '/moved') {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/admin` });
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end('{"db_password":"internal-s3cr3t"}');
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});

beforeEach(() => {
  connections = 0;
  requests = [];
});

afterAll(async () => {
  await Promise.all(senders.map((s) => s.close()));
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

/** Names resolve to 127.0.0.1 (a name inside the private network, here loopback). */
function senderOf(allowed: string, opts: { sendResponseBody?: boolean; now?: () => number } = {}): TargetSender {
  const guard = createTargetGuard(parseTargetPolicy(allowed, true).policy, { resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
  const s = createTargetSender({ guard, ...opts });
  senders.push(s);
  return s;
}

const item = (url: string): WorkItem => ({
  id: 'dlv_1',
  lease_owner: 'edge:a:1',
  url,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body_base64: Buffer.from('{}').toString('base64'),
  timeout_ms: 5_000,
  lease_until: new Date(Date.now() + 60_000).toISOString(),
});

test('an address URL outside EDGE_ALLOWED_TARGETS is an ssrf_blocked attempt; nothing connects', async () => {
  const report = await senderOf('10.0.0.0/8').send(item(`http://127.0.0.1:${port}/admin/export`), 1024);
  expect(report).toMatchObject({ status_code: null, response_body: null, response_headers: null, error_kind: 'ssrf_blocked', error: 'target 127.0.0.1 refused by the edge agent: not in EDGE_ALLOWED_TARGETS' });
  expect(connections).toBe(0);
});

test('a name whose resolved address is outside EDGE_ALLOWED_TARGETS is refused at connect time; nothing connects', async () => {
  const report = await senderOf('10.0.0.0/8').send(item(`http://private.internal:${port}/admin/export`), 1024);
  expect(report).toMatchObject({ status_code: null, response_body: null, error_kind: 'ssrf_blocked', error: 'target private.internal refused by the edge agent: not in EDGE_ALLOWED_TARGETS' });
  expect(connections).toBe(0);
});

test('a listed host name and a listed range are delivered to', async () => {
  const s = senderOf('10.0.0.0/8,private.internal,127.0.0.1/32');
  expect(await s.send(item(`http://private.internal:${port}/hook`), 1024)).toMatchObject({ status_code: 200, error_kind: null, response_body: '{"db_password":"internal-s3cr3t"}' });
  expect(await s.send(item(`http://127.0.0.1:${port}/hook`), 1024)).toMatchObject({ status_code: 200, error_kind: null });
  expect(requests).toEqual(['POST /hook', 'POST /hook']);
});

test('by default a loopback target is delivered to, its answer reported', async () => {
  const report = await senderOf('').send(item(`http://127.0.0.1:${port}/hook`), 1024);
  expect(report).toMatchObject({ status_code: 200, error_kind: null, response_body: '{"db_password":"internal-s3cr3t"}', response_headers: { 'content-type': 'application/json' } });
});

test('EDGE_SEND_RESPONSE_BODY=false sends the status and headers back, never the body', async () => {
  const report = await senderOf('', { sendResponseBody: false }).send(item(`http://127.0.0.1:${port}/hook`), 1024);
  expect(report).toMatchObject({ status_code: 200, error_kind: null, response_body: null, response_headers: { 'content-type': 'application/json' } });
});

test('a redirect is not followed, even to an allowed target', async () => {
  const report = await senderOf('').send(item(`http://127.0.0.1:${port}/moved`), 1024);
  expect(report).toMatchObject({ status_code: 302, error_kind: 'redirect' });
  expect(requests).toEqual(['POST /moved']);
});

test("started_at is stamped on the service's time (the client's corrected clock), not this host's, sent or refused", async () => {
  // This host is 20 minutes behind the service: the service would refuse its own time.
  const serviceNow = (): number => Date.now() + 20 * 60_000;
  const s = senderOf('127.0.0.1/32', { now: serviceNow });
  for (const url of [`http://127.0.0.1:${port}/hook`, `http://10.0.0.1:${port}/hook`]) {
    const before = serviceNow();
    const report = await s.send(item(url), 1024);
    const startedAt = Date.parse(report!.started_at);
    expect(startedAt).toBeGreaterThanOrEqual(before);
    expect(startedAt).toBeLessThanOrEqual(serviceNow());
  }
});
