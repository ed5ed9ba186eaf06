// Ingest keeps and forwards the bytes received as the body itself and decodes no content
// coding: a body sent with a Content-Encoding other than identity is refused with 415 and
// nothing stored, and the connection stays usable for the next request.
import { request, Agent } from 'node:http';
import { gzipSync } from 'node:zlib';
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';

let h: IngestHarness;
beforeAll(async () => {
  h = await startIngestHarness({ label: 'ingenc' });
});
afterAll(() => h.close());

const body = JSON.stringify({ type: 'order.paid', pad: 'a'.repeat(2000) });

/** Everything a request could have written for this ingester. */
const written = async (ingesterId: string): Promise<Record<string, number>> => {
  const n = async (sql: string): Promise<number> => (await h.db.pool.query(sql, [ingesterId])).rows[0].n;
  return {
    events: await n('SELECT count(*)::int AS n FROM events WHERE ingester_id = $1'),
    payloads: await n('SELECT count(*)::int AS n FROM event_payloads p JOIN events e ON e.id = p.event_id WHERE e.ingester_id = $1'),
    records: await n(`SELECT count(*)::int AS n FROM idempotency_records WHERE scope = 'ingest:' || $1`),
    rejections: await n('SELECT count(*)::int AS n FROM ingest_rejections WHERE ingester_id = $1'),
  };
};

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: Record<string, unknown>;
  localPort: number;
}

/** One POST over the given keep-alive agent (one socket), reporting the socket's local port. */
function post(agent: Agent, path: string, data: Buffer | string, headers: Record<string, string>): Promise<Answer> {
  const u = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, headers: res.headers, json: text ? (JSON.parse(text) as Record<string, unknown>) : {}, localPort: req.socket!.localPort! });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

// The next request on the same socket says identity (any case) or nothing: the body as it is.
test.each([
  { encoding: 'gzip', data: gzipSync(body), next: null },
  { encoding: 'GZip', data: gzipSync(body), next: 'identity' },
  { encoding: 'br', data: Buffer.from(body), next: 'Identity' },
  { encoding: 'identity, gzip', data: gzipSync(body), next: '' },
  { encoding: 'deflate,identity', data: Buffer.from(body), next: 'IDENTITY' },
])('Content-Encoding $encoding → 415 unsupported-media-type, nothing stored; the connection serves the next request (Content-Encoding $next) → 202', async ({ encoding, data, next: nextEncoding }) => {
  const { ingesterId } = await h.seedIngester();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const refused = await post(agent, `/in/${ingesterId}`, data, { 'content-encoding': encoding, 'x-request-id': 'req-enc-1' });
    expect(refused.status).toBe(415);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.headers['accept-encoding']).toBe('identity');
    expect(refused.headers['connection']).not.toBe('close');
    expect(refused.json).toEqual({
      type: 'https://hookline.dev/errors/unsupported-media-type',
      title: 'Unsupported Media Type',
      status: 415,
      detail: expect.stringContaining('Content-Encoding'),
      instance: 'req-enc-1',
    });
    expect(await written(ingesterId)).toEqual({ events: 0, payloads: 0, records: 0, rejections: 0 });
    const next = await post(agent, `/in/${ingesterId}`, body, nextEncoding === null ? {} : { 'content-encoding': nextEncoding });
    expect(next.status).toBe(202);
    expect(next.localPort).toBe(refused.localPort);
    const { rows } = await h.db.pool.query(`SELECT e.type, convert_from(p.body, 'UTF8') AS body FROM events e JOIN event_payloads p ON p.event_id = e.id WHERE e.ingester_id = $1`, [ingesterId]);
    expect(rows).toEqual([{ type: 'order.paid', body }]);
  } finally {
    agent.destroy();
  }
});
