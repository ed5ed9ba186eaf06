import { outcomeOf, redactParams } from './audit-log';
import { requestHash } from '../limits/idempotency';

describe('redactParams', () => {
  it('hides secrets at any depth and keeps only the names of headers', () => {
    const out = redactParams({
      name: 'x',
      config: { signing_secret: 's', signing_secrets: ['a', 'b'], mtls: { cert: 'C', key: 'K' }, tolerance_seconds: 5 },
      headers: { Authorization: 'Bearer t' },
      password: 'p',
      body: '{"card":"4242"}',
    });
    expect(out).toEqual({
      name: 'x',
      config: { signing_secret: '[redacted]', signing_secrets: '[redacted]', mtls: { cert: '[redacted]', key: '[redacted]' }, tolerance_seconds: 5 },
      headers: { Authorization: '[redacted]' },
      password: '[redacted]',
      body: '[15 bytes]',
    });
  });

  it('masks URL credentials and keeps only the names of header rules', () => {
    const out = redactParams({
      path: { tid: 'ten_1' },
      body: {
        url: 'https://user:pa55word@example.test/h?x=1',
        other: ['https://only-a-token@example.test/', 'https://example.test/plain', 'not a url @ all'],
        config: { required_headers: { 'X-Token': 'shared-value', 'x-present': null }, credentials: 'c' },
        list: { required_headers: ['X-Source'] },
      },
    });
    expect(out).toEqual({
      path: { tid: 'ten_1' },
      body: {
        url: 'https://user:****@example.test/h?x=1',
        other: ['https://****@example.test/', 'https://example.test/plain', 'not a url @ all'],
        config: { required_headers: { 'X-Token': '[redacted]', 'x-present': null }, credentials: '[redacted]' },
        list: { required_headers: ['X-Source'] },
      },
    });
  });

  it('classifies outcomes by status', () => {
    expect([outcomeOf(201), outcomeOf(409), outcomeOf(503)]).toEqual(['success', 'client_error', 'server_error']);
  });
});

describe('requestHash', () => {
  it('ignores key order but not values, paths or methods', () => {
    const a = requestHash('post', '/v1/x', { a: 1, b: { c: [1, 2] } });
    expect(requestHash('post', '/v1/x', { b: { c: [1, 2] }, a: 1 })).toBe(a);
    expect(requestHash('post', '/v1/x', { a: 1, b: { c: [2, 1] } })).not.toBe(a);
    expect(requestHash('put', '/v1/x', { a: 1, b: { c: [1, 2] } })).not.toBe(a);
    expect(requestHash('post', '/v1/y', { a: 1, b: { c: [1, 2] } })).not.toBe(a);
  });
});

describe('redactParams on refused (invalid) bodies', () => {
  it('redacts every secret-looking key the config rule refuses, at any depth', () => {
    const keys = ['apikey', 'api-key', 'accessKey', 'passwd', 'pwd', 'authorization', 'auth', 'bearer', 'jwt', 'cookie', 'x-signature', 'client_secret'];
    const config = Object.fromEntries(keys.map((k) => [k, `LEAK-${k}`]));
    const out = redactParams({ body: { config: { ...config, deep: { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { password: 'LEAK-deep' } } } } } } } } } } } } } });
    expect(JSON.stringify(out)).not.toContain('LEAK');
    expect((out as any).body.config.apikey).toBe('[redacted]');
  });

  it('keeps only the names of headers and header rules of any shape, and sizes a body of any type', () => {
    const out = redactParams({
      path: { tid: 't' },
      body: {
        config: {
          headers: [{ name: 'Authorization', value: 'Bearer LEAK-1' }, 'Bearer LEAK-2'],
          required_headers: [{ name: 'X-Token', value: 'LEAK-3' }, 'X-Source', { 'X-Other': 'LEAK-4' }],
        },
        body: { card: 'LEAK-5' },
      },
    });
    expect(out).toEqual({
      path: { tid: 't' },
      body: {
        config: {
          headers: [{ name: 'Authorization', value: '[redacted]' }, '[redacted]'],
          required_headers: [{ name: 'X-Token', value: '[redacted]' }, 'X-Source', { 'X-Other': '[redacted]' }],
        },
        body: '[17 bytes]',
      },
    });
    expect(redactParams({ body: { headers: 'Authorization: Bearer LEAK-6', body: ['LEAK-7'] } })).toEqual({ body: { headers: '[redacted]', body: '[10 bytes]' } });
  });

  it('masks the credential of a URL with extra slashes before its userinfo', () => {
    expect(redactParams({ body: { url: 'https:///alice:s3cr3t@hooks.example.com/x' } })).toEqual({ body: { url: 'https://alice:****@hooks.example.com/x' } });
  });
});
