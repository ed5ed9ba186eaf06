// Ingest must not let unauthenticated clients hold request bodies in its memory: an unknown
// or inactive ingester is refused before its body is read, and the bytes being buffered at
// once are capped process-wide (INGEST_MAX_BUFFERED_BYTES). Real sockets on loopback; the
// partial bodies below are never finished before the answer is awaited, so an answer that
// waited for the body would never come.
import { connect, type Socket } from 'node:net';
import { loadConfig } from '@hookline/config';
import type { Pool } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import type { Producer, Redis } from '@hookline/queues';
import { waitFor } from '@hookline/testing';
import { createIngestApp } from '../services/ingest/src/app';
import { ingestEnv } from '../services/ingest/src/config';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';

let h: IngestHarness;
let port: number;

const LIMIT = 1000;
const CAP = 1500;

beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingmem', env: { PAYLOAD_LIMIT_BYTES: String(LIMIT), INGEST_MAX_BUFFERED_BYTES: String(CAP), INGESTER_CACHE_TTL_MS: '600000' } });
  port = Number(new URL(h.url).port);
});
afterAll(() => h.close());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A request written by hand: its head (with `headers`) and `first` bytes of its body go out
 * at once; `send` writes more later. `answer` resolves once a whole response (head and
 * Content-Length body) has arrived, whether or not the request was finished; `closed` when
 * the server ends the connection.
 */
function rawRequest(path: string, headers: Record<string, string>, first: string, to = port): { socket: Socket; answer: Promise<RawAnswer>; closed: Promise<void>; send(data: string): void } {
  const socket = connect(to, '127.0.0.1');
  let data = Buffer.alloc(0);
  let settle: ((a: RawAnswer) => void) | null = null;
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    settle = resolve;
    socket.on('error', reject);
  });
  // Writing the rest after the server closed may fail (EPIPE, ECONNRESET): the answer is what is checked.
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('data', (chunk: Buffer) => {
    data = Buffer.concat([data, chunk]);
    const end = data.indexOf('\r\n\r\n');
    if (end < 0 || !settle) return;
    const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
    const head: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      head[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(head['content-length'] ?? 0);
    if (data.length < end + 4 + length) return;
    const done = settle;
    settle = null;
    done({ status: Number(statusLine!.split(' ')[1]), headers: head, body: data.subarray(end + 4, end + 4 + length).toString('utf8') });
  });
  const lines = Object.entries({ host: '127.0.0.1', 'content-type': 'application/json', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`POST ${path} HTTP/1.1\r\n${lines.join('')}\r\n${first}`);
  return {
    socket,
    answer,
    closed,
    send: (more) => {
      if (!socket.destroyed) socket.write(more, () => undefined);
    },
  };
}

const bodyOf = (n: number): string => `{"pad":"${'x'.repeat(n - 10)}"}`;

describe('unknown or inactive ingester: 404 before the body is read, then the connection closes', () => {
  test.each([
    ['unknown', async (): Promise<string> => 'ing_doesnotexist_mem'],
    ['DISABLED', async (): Promise<string> => (await h.seedIngester({ state: 'DISABLED' })).ingesterId],
  ])('%s ingester', async (_, idOf) => {
    const id = await idOf();
    const body = bodyOf(900);
    const req = rawRequest(`/in/${id}`, { 'content-length': String(body.length), 'x-request-id': 'req-mem-404' }, body.slice(0, 20));
    // Only 20 of 900 bytes sent: the answer must not need the rest.
    const res = await req.answer;
    expect(res.status).toBe(404);
    expect(res.headers['connection']).toBe('close');
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({ status: 404, instance: 'req-mem-404', type: expect.stringMatching(/\/not-found$/) });
    // The server ends the connection: the unread body is never read.
    await req.closed;
    req.send(body.slice(20));
    expect(h.app.bufferedBytes()).toBe(0);
  });

  test('an unknown ingester declaring a body over PAYLOAD_LIMIT_BYTES → 404 too (its existence is checked first)', async () => {
    const req = rawRequest('/in/ing_doesnotexist_big', { 'content-length': String(LIMIT * 10) }, '{');
    const res = await req.answer;
    expect(res.status).toBe(404);
    expect(res.headers['connection']).toBe('close');
    await req.closed;
  });

  test('a known ingester still waits for its body and answers 202, keeping the connection', async () => {
    const { ingesterId } = await h.seedIngester();
    const body = bodyOf(300);
    const req = rawRequest(`/in/${ingesterId}`, { 'content-length': String(body.length) }, body.slice(0, 20));
    await waitFor(() => h.app.bufferedBytes() === body.length, { what: 'the body to be reserved' });
    req.send(body.slice(20));
    const res = await req.answer;
    expect(res.status).toBe(202);
    expect(res.headers['connection']).not.toBe('close');
    expect(h.app.bufferedBytes()).toBe(0);
    req.socket.destroy();
  });
});

describe('INGEST_MAX_BUFFERED_BYTES: bodies being received at once', () => {
  test('past the cap a new request gets 503 with Retry-After before its body is read; once the held body is done, the same request is accepted', async () => {
    const { ingesterId } = await h.seedIngester();
    const held = bodyOf(LIMIT);
    const holder = rawRequest(`/in/${ingesterId}`, { 'content-length': String(held.length) }, held.slice(0, 10));
    await waitFor(() => h.app.bufferedBytes() === LIMIT, { what: 'the held body to be reserved' });

    // 1000 held + 600 > 1500: refused without sending a byte of its body.
    const more = bodyOf(600);
    const refused = rawRequest(`/in/${ingesterId}`, { 'content-length': String(more.length), 'x-request-id': 'req-mem-503' }, '');
    const res = await refused.answer;
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['connection']).toBe('close');
    expect(JSON.parse(res.body)).toMatchObject({ status: 503, instance: 'req-mem-503', type: expect.stringMatching(/\/service-unavailable$/) });
    await refused.closed;

    // A chunked body (no Content-Length) may grow to PAYLOAD_LIMIT_BYTES: it reserves that much.
    const chunked = rawRequest(`/in/${ingesterId}`, { 'transfer-encoding': 'chunked' }, '');
    expect((await chunked.answer).status).toBe(503);
    await chunked.closed;

    // Within the cap (1000 + 400): accepted.
    const fits = bodyOf(400);
    expect((await h.post(ingesterId, fits)).status).toBe(202);

    holder.send(held.slice(10));
    expect((await holder.answer).status).toBe(202);
    holder.socket.destroy();
    expect(h.app.bufferedBytes()).toBe(0);
    expect((await h.post(ingesterId, more)).status).toBe(202);

    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM events WHERE ingester_id = $1', [ingesterId]);
    expect(rows[0].n).toBe(3);
  });

  test('a client that goes away mid-body gives its reservation back', async () => {
    const { ingesterId } = await h.seedIngester();
    const body = bodyOf(LIMIT);
    const req = rawRequest(`/in/${ingesterId}`, { 'content-length': String(body.length) }, body.slice(0, 10));
    req.answer.catch(() => undefined);
    await waitFor(() => h.app.bufferedBytes() === LIMIT, { what: 'the body to be reserved' });
    req.socket.destroy();
    await waitFor(() => h.app.bufferedBytes() === 0, { what: 'the reservation to be released' });
    expect((await h.post(ingesterId, bodyOf(LIMIT))).status).toBe(202);
  });
});

describe('INGEST_REQUEST_TIMEOUT_MS: a request must be received whole in time', () => {
  let t: IngestHarness;
  beforeAll(async () => {
    t = await startIngestHarness({ label: 'ingmemto', env: { INGEST_REQUEST_TIMEOUT_MS: '1000' } });
  });
  afterAll(() => t.close());

  test('a body that stalls → 408, the connection closed and its reservation released', async () => {
    const { ingesterId } = await t.seedIngester();
    const body = bodyOf(500);
    const req = rawRequest(`/in/${ingesterId}`, { 'content-length': String(body.length) }, body.slice(0, 10), Number(new URL(t.url).port));
    await waitFor(() => t.app.bufferedBytes() === body.length, { what: 'the body to be reserved' });
    const res = await req.answer;
    expect(res.status).toBe(408);
    await req.closed;
    await waitFor(() => t.app.bufferedBytes() === 0, { what: 'the reservation to be released' });
    expect(t.app.server.requestTimeout).toBe(1000);
    expect(t.app.server.headersTimeout).toBe(1000);
  });
});

describe('INGEST_MAX_CONNECTIONS', () => {
  let c: IngestHarness;
  beforeAll(async () => {
    c = await startIngestHarness({ label: 'ingmemconn', env: { INGEST_MAX_CONNECTIONS: '2' } });
  });
  afterAll(() => c.close());

  const connections = (): Promise<number> => new Promise((resolve, reject) => c.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect(Number(new URL(c.url).port), '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });

  test('past the cap a new connection is closed at once; below it again, one is served', async () => {
    const held = [await open(), await open()];
    await waitFor(async () => (await connections()) === 2, { what: 'two connections to be counted' });
    const extra = await open();
    let received = '';
    extra.on('data', (d: Buffer) => (received += d.toString()));
    extra.on('error', () => undefined);
    // Closed by the server at once, without an answer (a timeout would have sent 408 first).
    await new Promise<void>((resolve) => extra.on('close', () => resolve()));
    expect(received).toBe('');
    held[0]!.destroy();
    await waitFor(async () => (await connections()) === 1, { what: 'a connection to be freed' });
    // A new connection is served again (POST on /healthz: 405 from the router).
    const served = rawRequest('/healthz', {}, '', Number(new URL(c.url).port));
    expect((await served.answer).status).toBe(405);
    for (const s of [...held, served.socket]) s.destroy();
  });
});

test('INGEST_MAX_BUFFERED_BYTES below PAYLOAD_LIMIT_BYTES stops the boot, naming both', () => {
  const config = loadConfig(ingestEnv, { PAYLOAD_LIMIT_BYTES: '2048', INGEST_MAX_BUFFERED_BYTES: '1024' });
  const logger = createLogger('ingest-test', 'error');
  logger.silent = true;
  expect(() => createIngestApp({ config, trustedProxies: [], pool: {} as Pool, producer: {} as Producer, redis: {} as Redis, logger })).toThrow(
    /INGEST_MAX_BUFFERED_BYTES \(1024\) must be at least PAYLOAD_LIMIT_BYTES \(2048\)/,
  );
});
