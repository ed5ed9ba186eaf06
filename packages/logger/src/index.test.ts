// The logger drops lines below its level before formatting them, and still writes (and
// redacts) the ones at or above it.
import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger } from './index';

function captured(level: string): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger('logger-test', level);
  logger.clear(); // no console output from the test: one stream transport instead
  logger.add(new winston.transports.Stream({ stream: new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }) }));
  return { logger, lines };
}

test('a line below the level is never serialized; one at the level is, redacted', () => {
  const { logger, lines } = captured('warn');
  let serialized = 0;
  const meta = () => ({ detail: { toJSON: () => (serialized++, 'shown') }, secret: 'whsec_x' });
  logger.debug('skipped', meta());
  logger.child({ job_id: 'j1' }).info('skipped too', meta());
  expect(serialized).toBe(0);
  expect(lines).toEqual([]);
  logger.warn('kept', meta());
  expect(serialized).toBe(1);
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', message: 'kept', detail: 'shown', secret: '[redacted]', service: 'logger-test' });
});

test('the level can change at run time', () => {
  const { logger, lines } = captured('warn');
  logger.level = 'debug';
  logger.debug('now kept', { n: 1 });
  expect(lines.map((l) => JSON.parse(l).message)).toEqual(['now kept']);
});

describe('redaction', () => {
  const line = (log: (logger: ReturnType<typeof createLogger>) => void): Record<string, unknown> => {
    const { logger, lines } = captured('debug');
    log(logger);
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  };

  test('secrets under any spelling are redacted at any depth; ids that merely mention a key are kept', () => {
    const out = line((l) =>
      l.info('x', {
        request: {
          headers: { Authorization: 'Bearer eyJ.a.b', 'X-API-Key': 'hl_live_1', 'x-mcp-api-key': 'mcp_1', 'x-hub-signature-256': 'sha256=ab', 'x-shopify-hmac-sha256': 'c2ln', 'Proxy-Authorization': 'Basic dTpw' },
          auth: { access_token: 'at_1', refresh_token: 'rt_1', client_secret: 'cs_1', clusterKey: 'hkc_1', SECRETS_KEY: 'sk_1', private_key: 'pk_1', passwd: 'p_1' },
        },
        destination: { signingSecret: 'whsec_1', config: { signing_secret: 'whsec_2' } },
        runTogether: { clientsecret: 'rt_cs', authtoken: 'rt_at', dbpassword: 'rt_pw', signingkey: 'rt_sk', CLUSTERKEY: 'rt_ck', 'x-signature256': 'rt_sig' },
        api_key_id: 'key_01',
        idempotency_key: 'dlv_01',
        delivery_id: 'dlv_02',
      }),
    );
    const text = JSON.stringify(out);
    for (const secret of ['eyJ', 'hl_live_1', 'mcp_1', 'sha256=ab', 'c2ln', 'dTpw', 'at_1', 'rt_1', 'cs_1', 'hkc_1', 'sk_1', 'pk_1', 'p_1', 'whsec_1', 'whsec_2', 'rt_cs', 'rt_at', 'rt_pw', 'rt_sk', 'rt_ck', 'rt_sig']) expect(text).not.toContain(secret);
    expect(out).toMatchObject({ api_key_id: 'key_01', idempotency_key: 'dlv_01', delivery_id: 'dlv_02' });
  });

  test('payload bodies are never written, whatever they are called; their limits are', () => {
    const out = line((l) => l.warn('x', { job: { body: '{"card":"4242"}', raw_body: 'r', rawBody: 'r2', payload: { card: '4242' }, body_base64: 'eyJj', request_body: 'q', response_body: 'a' }, response_body_limit: 4096 }));
    expect(JSON.stringify(out)).not.toMatch(/4242|eyJj|"r"|"r2"|"q"|"a"/);
    expect(out['response_body_limit']).toBe(4096);
  });

  test('nothing deeper than the redaction looks is written', () => {
    const deep = { a: { b: { c: { d: { e: { f: { g: { h: { password: 'hunter2', note: 'n' } } } } } } } } };
    expect(JSON.stringify(line((l) => l.info('x', { deep })))).not.toContain('hunter2');
  });

  test('an error keeps its message, stack and cause, with its secret fields redacted and credentials in its text scrubbed', () => {
    const cause = new Error('connect ECONNREFUSED redis://default:hunter2@redis:6379');
    const err = Object.assign(new Error('request failed: Authorization: Bearer tok_live_123', { cause }), { code: 'E_X', config: { headers: { authorization: 'Basic dXNlcjpwYXNz' } } });
    const out = line((l) => l.error('delivery failed', { error: err }));
    const e = out['error'] as Record<string, any>;
    expect(e).toMatchObject({ name: 'Error', message: 'request failed: Authorization: Bearer [redacted]', code: 'E_X', config: { headers: { authorization: '[redacted]' } } });
    expect(e['stack']).toContain('request failed');
    expect(e['cause']).toMatchObject({ message: 'connect ECONNREFUSED redis://[redacted]@redis:6379' });
    expect(JSON.stringify(out)).not.toMatch(/hunter2|tok_live_123|dXNlcjpwYXNz/);
    // Logged as the message itself, and as the text of `error` (how the code mostly logs failures).
    expect(JSON.stringify(line((l) => l.error(new Error('no route to postgres://app:s3cret@db/hookline'))))).not.toContain('s3cret');
    expect(line((l) => l.warn('x', { error: 'redis://:s3cret@redis:6379 refused' }))['error']).toBe('redis://[redacted]@redis:6379 refused');
    // A user name alone can be the credential (https://sk_live_x@host), and an `@` in a password leaves nothing behind.
    expect(line((l) => l.warn('x', { error: 'GET https://sk_live_x@host/a and https://u:p@ss@host/b?q=a@b' }))['error']).toBe('GET https://[redacted]@host/a and https://[redacted]@host/b?q=a@b');
  });
});
