// The deliverer's HTTP sender against a loopback receiver: the path, query and userinfo of
// a destination URL (parsed once per URL and kept), and URLs it cannot send to.
import { startReceiver, type Receiver } from '@hookline/testing';
import type { DestinationSettings } from '@hookline/delivery';
import { createHttpSender, type HttpSender, type SendTarget } from '../services/deliverer/src/http-sender';
import { createSsrfGuard } from '../services/deliverer/src/ssrf/ssrf-guard';

let rx: Receiver;
let sender: HttpSender;

const settings: DestinationSettings = {
  method: 'POST',
  headers: {},
  timeoutMs: 5_000,
  maxConcurrency: 4,
  maxAttempts: 3,
  retryScheduleMs: null,
  retryOnStatus: null,
  rateLimitPerSecond: null,
  mtls: null,
};
const target = (url: string, destinationId = 'dst_sender'): SendTarget => ({ destinationId, url, settings, mtlsKey: null });
const body = Buffer.from('{"a":1}');

beforeAll(async () => {
  rx = await startReceiver();
  sender = createHttpSender({ guard: createSsrfGuard(['127.0.0.0/8', '::1/128']), responseBodyLimit: 1024, maxInFlight: 16 });
});

afterAll(async () => {
  await sender?.close();
  await rx?.close();
});

test('the path, the query and the userinfo of the URL reach the receiver, on every request to it', async () => {
  const withAuth = rx.url.replace('http://', 'http://hook%40user:p%3Ass@') + '/in/a?src=x&n=1';
  for (let i = 0; i < 3; i++) {
    const r = await sender.send(target(withAuth), { 'x-n': String(i) }, body);
    expect(r).toMatchObject({ statusCode: 200, errorKind: null });
  }
  const plain = await sender.send(target(`${rx.url}/plain`, 'dst_other'), { 'x-n': 'plain' }, body);
  expect(plain.statusCode).toBe(200);

  expect(rx.requests.map((q) => [q.url, q.headers['authorization'] ?? null, q.headers['x-n']])).toEqual([
    ['/in/a?src=x&n=1', `Basic ${Buffer.from('hook@user:p:ss').toString('base64')}`, '0'],
    ['/in/a?src=x&n=1', `Basic ${Buffer.from('hook@user:p:ss').toString('base64')}`, '1'],
    ['/in/a?src=x&n=1', `Basic ${Buffer.from('hook@user:p:ss').toString('base64')}`, '2'],
    ['/plain', null, 'plain'],
  ]);
  expect(rx.requests.every((q) => q.body.equals(body))).toBe(true);
});

test('an invalid URL or another scheme is a failed attempt of kind connect, every time, and sends nothing', async () => {
  const before = rx.requests.length;
  for (let i = 0; i < 2; i++) {
    expect(await sender.send(target('not a url'), {}, body)).toMatchObject({ statusCode: null, errorKind: 'connect', error: expect.stringContaining('invalid destination URL') });
    expect(await sender.send(target(`ftp://127.0.0.1:${new URL(rx.url).port}/x`), {}, body)).toMatchObject({
      statusCode: null,
      errorKind: 'connect',
      error: 'invalid destination URL: unsupported scheme ftp:',
    });
  }
  expect(rx.requests.length).toBe(before);
});
