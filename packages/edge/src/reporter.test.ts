// Reports against a small report endpoint on loopback that refuses as the api does: a
// report it cannot take fails the whole request (400), a body over its limit is a 413.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AttemptReport, ReportRequest } from '@hookline/delivery/src/wire';
import { createLogger } from '@hookline/logger';
import { createReporter } from './reporter';
import { createServiceClient, type ServiceClient } from './service-client';

const logger = createLogger('edge-test', 'error');
logger.silent = true;
const BODY_LIMIT = 1024 * 1024;

let server: Server;
let client: ServiceClient;
/** Sizes of the request bodies received, and the delivery ids recorded. */
const received: number[] = [];
const recorded: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      received.push(raw.length);
      const answer = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (raw.length > BODY_LIMIT) return answer(413, { title: 'Payload Too Large' });
      const { reports } = JSON.parse(raw.toString()) as ReportRequest;
      if (reports.some((r) => r.status_code !== null && r.status_code > 599)) return answer(400, { title: 'Validation Error', detail: 'status_code must be <= 599' });
      recorded.push(...reports.map((r) => r.delivery_id));
      answer(200, { results: reports.map((r) => ({ delivery_id: r.delivery_id, result: 'recorded', attempt: 1, status: 'delivered' })) });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  client = createServiceClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, clusterKey: 'hkc_test-cluster-key-0123456789', agentId: 'a', agentVersion: 't' });
});

afterAll(async () => {
  await client.close();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  received.length = 0;
  recorded.length = 0;
});

const attempt = (id: string, over: Partial<AttemptReport> = {}): AttemptReport => ({
  delivery_id: id,
  lease_owner: `edge:a:${id}`,
  status_code: 200,
  response_body: 'ok',
  response_headers: { 'content-type': 'text/plain' },
  error_kind: null,
  error: null,
  started_at: new Date().toISOString(),
  duration_ms: 3,
  ...over,
});

test('a report the service refuses is dropped alone: the others of its batch are recorded', async () => {
  const reporter = createReporter({ client, clusterId: 'cls_test', logger, backoff: { baseMs: 10, maxMs: 20 } });
  const ids = Array.from({ length: 9 }, (_, i) => `dlv_${i}`);
  await Promise.all(ids.map((id) => reporter.add(attempt(id, id === 'dlv_4' ? { status_code: 999 } : {}))));
  expect(recorded.sort()).toEqual(ids.filter((id) => id !== 'dlv_4').sort());
});

test('batches are sized by their JSON bytes: bodies of control characters (6 bytes each in JSON) never make a request too large', async () => {
  const reporter = createReporter({ client, clusterId: 'cls_test', logger, backoff: { baseMs: 10, maxMs: 20 } });
  const body = '\u0001'.repeat(16 * 1024);
  const ids = Array.from({ length: 40 }, (_, i) => `dlv_big_${i}`);
  await Promise.all(ids.map((id) => reporter.add(attempt(id, { status_code: 500, response_body: body }))));
  expect(recorded.sort()).toEqual(ids.sort());
  expect(Math.max(...received)).toBeLessThanOrEqual(BODY_LIMIT);
});
