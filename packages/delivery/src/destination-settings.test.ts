import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { destinationSettings, HEADER_VALUE_PATTERN, isSendableHeaderValue, warnUnsendableHeaders, type DeliveryDefaults } from './destination-settings';

const defaults: DeliveryDefaults = { timeoutMs: 15000, maxAttempts: 5, maxConcurrency: 10, retryScheduleMs: null };

// One character of each class at the edges of what undici sends as a header value.
const SAMPLES: Record<string, boolean> = {
  'nul \u0000': false,
  'ctl \u0001': false,
  'bs \u0008': false,
  'tab \t ok': true,
  'lf \n': false,
  'cr \r': false,
  'us \u001f': false,
  ' space and tilde ~': true,
  'del \u007f': false,
  'c1 \u0080': true,
  'latin1 café ÿ': true,
  'beyond latin1 \u0100': false,
  'euro €': false,
  'emoji \u{1F600}': false,
  'lone surrogate \ud800': false,
};

describe('header values a destination may send', () => {
  let server: Server;
  let pool: Pool;
  beforeAll(async () => {
    server = createServer((req, res) => res.end(String(req.headers['x-v'] ?? '')));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  afterAll(async () => {
    await pool.close();
    await new Promise((r) => server.close(r));
  });

  it('are exactly those undici sends (tab, 0x20-0x7e, 0x80-0xff): the pattern, undici and the expected answer agree', async () => {
    for (const [value, sendable] of Object.entries(SAMPLES)) {
      const sent = await pool.request({ path: '/', method: 'POST', headers: { 'x-v': value }, body: 'x' }).then(
        async (r) => (await r.body.text(), true),
        (err: Error) => (expect(err.message).toBe('invalid x-v header'), false),
      );
      expect([value, isSendableHeaderValue(value), sent]).toEqual([value, sendable, sendable]);
      // The JSON Schema pattern the API refuses values by: ajv compiles it with the u flag.
      expect([value, new RegExp(HEADER_VALUE_PATTERN, 'u').test(value)]).toEqual([value, sendable]);
    }
  });

  it('leave out, and name, configured values that cannot be sent; keep the rest', () => {
    const s = destinationSettings('POST', { headers: { 'X-A': 'ctl\u0001', 'x-b': 'euro €', 'x-c': 'del\u007f', 'x-d': 'tab\tok', 'x-e': 'café', Authorization: 'Bearer t' } }, defaults);
    expect(s.headers).toEqual({ 'x-d': 'tab\tok', 'x-e': 'café', authorization: 'Bearer t' });
    expect(s.unsendableHeaders).toEqual(['x-a', 'x-b', 'x-c']);
    expect(destinationSettings('POST', { headers: { 'x-d': 'ok' } }, defaults)).not.toHaveProperty('unsendableHeaders');
  });

  it('User-Agent is reserved (Hookline sets it): left out of a stored config, not named as unsendable', () => {
    const s = destinationSettings('POST', { headers: { 'User-Agent': 'mine/1.0', 'x-team': 'a' } }, defaults);
    expect(s.headers).toEqual({ 'x-team': 'a' });
    expect(s).not.toHaveProperty('unsendableHeaders');
  });

  it('warns once per destination and set of names, naming the headers and never their values', () => {
    const warnings: [string, Record<string, unknown> | undefined][] = [];
    const logger = { warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push([msg, fields]) };
    const bad = destinationSettings('POST', { headers: { Authorization: 'Bearer tök€n', 'x-ok': 'fine' } }, defaults);
    for (let i = 0; i < 3; i++) warnUnsendableHeaders(logger, 'dst_warn_1', bad);
    warnUnsendableHeaders(logger, 'dst_warn_1', destinationSettings('POST', { headers: { 'x-ok': 'fine' } }, defaults));
    expect(warnings).toEqual([[expect.stringContaining('cannot be sent'), { destination_id: 'dst_warn_1', header_names: ['authorization'] }]]);
    expect(JSON.stringify(warnings)).not.toContain('tök');
    // Another destination, or another set of names of the same one: said again.
    warnUnsendableHeaders(logger, 'dst_warn_2', bad);
    warnUnsendableHeaders(logger, 'dst_warn_1', destinationSettings('POST', { headers: { Authorization: 'x\u0001', 'x-b': '\u007f' } }, defaults));
    expect(warnings.map(([, f]) => f)).toEqual([
      { destination_id: 'dst_warn_1', header_names: ['authorization'] },
      { destination_id: 'dst_warn_2', header_names: ['authorization'] },
      { destination_id: 'dst_warn_1', header_names: ['authorization', 'x-b'] },
    ]);
  });
});
