// The agent's configuration is checked once at boot: every problem is named, secrets never quoted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@hookline/config';
import { loadEdgeConfig } from './config';

const good = { HOOKLINE_URL: 'https://hookline.example.com', CLUSTER_ID: 'cls_01jc5v9d3k0000000000000000', CLUSTER_KEY: 'hkc_0123456789abcdefghijklmnop' };

const problems = (env: Record<string, string>): string => {
  try {
    loadEdgeConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

test('a valid environment loads, with defaults', () => {
  const { config, tls } = loadEdgeConfig(good);
  expect(config).toMatchObject({ ...good, EDGE_MAX_IN_FLIGHT: 32, EDGE_POLL_WAIT_SECONDS: 25, SHUTDOWN_TIMEOUT_MS: 30_000 });
  expect(tls).toEqual({ cert: undefined, key: undefined, ca: undefined });
});

test('a short cluster key is named, never quoted', () => {
  const message = problems({ ...good, CLUSTER_KEY: 'hkc_s3cr3t' });
  expect(message).toMatch(/CLUSTER_KEY/);
  expect(message).not.toContain('s3cr3t');
});

test.each([
  ['not a URL', 'hookline.example.com', /HOOKLINE_URL must be an http\(s\) URL/],
  ['another scheme', 'ftp://hookline.example.com', /HOOKLINE_URL must be an http\(s\) URL/],
  ['with a query', 'https://hookline.example.com/?x=1', /HOOKLINE_URL must be a plain base URL/],
])('HOOKLINE_URL %s is refused with a clear message', (_, value, message) => {
  expect(problems({ ...good, HOOKLINE_URL: value })).toMatch(message);
});

test('a cluster id that is not one (it goes into the request path) is refused', () => {
  expect(problems({ ...good, CLUSTER_ID: 'cls_x/../../admin' })).toMatch(/CLUSTER_ID/);
});

test('a backoff cap below its base is refused', () => {
  expect(problems({ ...good, EDGE_BACKOFF_BASE_MS: '5000', EDGE_BACKOFF_MAX_MS: '1000' })).toMatch(/EDGE_BACKOFF_MAX_MS \(1000\) must not be below EDGE_BACKOFF_BASE_MS \(5000\)/);
});

describe('target settings', () => {
  test('by default any target but link-local is allowed, and answers are reported', () => {
    const { config, targets } = loadEdgeConfig(good);
    expect(config).toMatchObject({ EDGE_ALLOWED_TARGETS: '', EDGE_DENY_LINK_LOCAL: true, EDGE_SEND_RESPONSE_BODY: true });
    expect(targets).toMatchObject({ restricted: false, denyLinkLocal: true });
  });

  test('EDGE_ALLOWED_TARGETS and EDGE_DENY_LINK_LOCAL make the policy', () => {
    const { config, targets } = loadEdgeConfig({ ...good, EDGE_ALLOWED_TARGETS: '10.0.0.0/8, hooks.internal', EDGE_DENY_LINK_LOCAL: 'false', EDGE_SEND_RESPONSE_BODY: 'false' });
    expect(config.EDGE_SEND_RESPONSE_BODY).toBe(false);
    expect(targets).toMatchObject({ restricted: true, denyLinkLocal: false, hosts: new Set(['hooks.internal']) });
    expect(targets.cidrs).toHaveLength(1);
  });

  test('entries that are neither a CIDR nor a host name, or a list of nothing, stop the boot', () => {
    expect(problems({ ...good, EDGE_ALLOWED_TARGETS: '10.0.0.0/8,10.0.0.0/40,http://x' })).toMatch(/EDGE_ALLOWED_TARGETS entries are neither a CIDR nor a host name: "10.0.0.0\/40", "http:\/\/x"/);
    expect(problems({ ...good, EDGE_ALLOWED_TARGETS: ' , ' })).toMatch(/EDGE_ALLOWED_TARGETS lists nothing/);
    expect(problems({ ...good, EDGE_DENY_LINK_LOCAL: 'maybe' })).toMatch(/EDGE_DENY_LINK_LOCAL/);
  });
});

describe('mTLS material', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edge-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a key given without its BEGIN line is taken for a path: the error names the variable, not the key', () => {
    const key = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7';
    const message = problems({ ...good, EDGE_CLIENT_CERT: join(dir, 'missing.pem'), EDGE_CLIENT_KEY: key });
    expect(message).toMatch(/EDGE_CLIENT_KEY is neither a PEM nor a readable file \(ENOENT\)/);
    expect(message).toMatch(/EDGE_CLIENT_CERT is neither a PEM nor a readable file/);
    expect(message).not.toContain(key);
  });

  test('a certificate without its key, and PEM that is not a certificate, are refused at boot', () => {
    const bad = join(dir, 'bad.pem');
    writeFileSync(bad, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
    const badKey = '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n';
    expect(problems({ ...good, EDGE_CLIENT_CERT: bad })).toMatch(/EDGE_CLIENT_CERT and EDGE_CLIENT_KEY go together/);
    expect(problems({ ...good, EDGE_CLIENT_CERT: bad, EDGE_CLIENT_KEY: badKey })).toMatch(/EDGE_CLIENT_CERT and EDGE_CLIENT_KEY do not make a usable TLS identity/);
    expect(problems({ ...good, EDGE_CA: bad })).toMatch(/EDGE_CA holds no readable CA certificate/);
  });
});
