// The signed client against a small HTTP service on loopback that checks signatures as the
// api does (HMAC over "<t>.<raw body>", 300 s window, on its own clock).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyServiceSignature } from '@hookline/signing';
import { createServiceClient, MAX_RETRY_AFTER_MS, parseRetryAfter, ServiceError } from './service-client';

const KEY = 'hkc_test-cluster-key-0123456789';

interface Service {
  url: string;
  requests: { ok: boolean; reason?: string }[];
  close(): Promise<void>;
}

async function startService(answer: (req: IncomingMessage, res: ServerResponse, verified: boolean) => void): Promise<Service> {
  const requests: Service['requests'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const v = verifyServiceSignature([KEY], Buffer.concat(chunks), req.headers['x-service-signature'] as string, req.headers['x-service-timestamp'] as string, 300);
      requests.push(v.ok ? { ok: true } : { ok: false, reason: v.reason });
      answer(req, res, v.ok);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const services: Service[] = [];
afterAll(() => Promise.all(services.map((s) => s.close())));
const service = async (answer: Parameters<typeof startService>[0]): Promise<Service> => {
  const s = await startService(answer);
  services.push(s);
  return s;
};

test("an agent whose clock is an hour off signs with the service's time, learnt from its Date: one refusal, then accepted", async () => {
  const svc = await service((_req, res, ok) => (ok ? json(res, 200, { deliveries: [] }) : json(res, 401, { title: 'Unauthorized' })));
  const client = createServiceClient({ baseUrl: svc.url, clusterKey: KEY, agentId: 'a', agentVersion: 't', clock: () => Date.now() - 3_600_000 });
  try {
    await expect(client.post('/work', { max: 0 })).resolves.toEqual({ deliveries: [] });
    expect(svc.requests).toEqual([{ ok: false, reason: 'timestamp_out_of_tolerance' }, { ok: true }]);
    // Every later request is signed right the first time, and the agent reads leases on the service's clock.
    await client.post('/work', { max: 0 });
    expect(svc.requests).toHaveLength(3);
    expect(Math.abs(client.now() - Date.now())).toBeLessThan(5_000);
  } finally {
    await client.close();
  }
});

test('a wrong key is refused once, not retried (the clock was right)', async () => {
  const svc = await service((_req, res, ok) => (ok ? json(res, 200, {}) : json(res, 401, { title: 'Unauthorized' })));
  const client = createServiceClient({ baseUrl: svc.url, clusterKey: 'hkc_another-key-of-another-cluster', agentId: 'a', agentVersion: 't' });
  try {
    await expect(client.post('/work', {})).rejects.toMatchObject({ status: 401, permanent: false });
    expect(svc.requests).toEqual([{ ok: false, reason: 'signature_mismatch' }]);
  } finally {
    await client.close();
  }
});

test("429 and 503 carry the service's Retry-After, in seconds or as a date on the service's clock", async () => {
  const answers = [
    (res: ServerResponse) => json(res, 429, { title: 'Rate Limit Exceeded' }, { 'retry-after': '7' }),
    (res: ServerResponse) => json(res, 503, { title: 'Service Unavailable' }, { date: 'Wed, 21 Oct 2026 07:28:00 GMT', 'retry-after': 'Wed, 21 Oct 2026 07:28:30 GMT' }),
    (res: ServerResponse) => json(res, 503, { title: 'Service Unavailable' }, { 'retry-after': '86400' }),
    (res: ServerResponse) => json(res, 500, { title: 'Internal Server Error' }),
  ];
  const svc = await service((_req, res) => answers[svc.requests.length - 1]!(res));
  const client = createServiceClient({ baseUrl: svc.url, clusterKey: KEY, agentId: 'a', agentVersion: 't' });
  const failure = (): Promise<ServiceError> => client.post('/work', {}).then(() => Promise.reject(new Error('expected a failure')), (e: ServiceError) => e);
  try {
    expect(await failure()).toMatchObject({ status: 429, retryAfterMs: 7_000, permanent: false });
    // The date is 30 s after the service's own Date (whole seconds, read as the middle of that second).
    expect(await failure()).toMatchObject({ status: 503, retryAfterMs: 29_500 });
    expect(await failure()).toMatchObject({ status: 503, retryAfterMs: MAX_RETRY_AFTER_MS });
    expect(await failure()).toMatchObject({ status: 500, retryAfterMs: null });
  } finally {
    await client.close();
  }
  expect(parseRetryAfter('soon', Date.now())).toBeNull();
  expect(parseRetryAfter(undefined, Date.now())).toBeNull();
});

test('a 200 whose body is not JSON fails without quoting it (it could be delivery data)', async () => {
  const svc = await service((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('sk_live_51H <html>captive portal</html>');
  });
  const client = createServiceClient({ baseUrl: svc.url, clusterKey: KEY, agentId: 'a', agentVersion: 't' });
  try {
    const err = (await client.post('/work', {}).catch((e: Error) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.message).not.toContain('sk_live');
    expect(err.permanent).toBe(false);
  } finally {
    await client.close();
  }
});
