import { ConfigError } from '@hookline/config';
import { loadApiConfig, parseRateLimits } from './config';

describe('api config', () => {
  it('has the documented defaults', () => {
    const c = loadApiConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.HOST).toBe('0.0.0.0');
    expect(c.JWT_EXPIRES_IN).toBe('1h');
    expect(c.rateLimits.free).toEqual({ perMinute: 100, burst: 200 });
    expect([c.LOGIN_MAX_FAILURES_PER_ACCOUNT, c.LOGIN_MAX_FAILURES_PER_IP, c.LOGIN_FAILURE_WINDOW_SECONDS]).toEqual([10, 50, 900]);
    expect(c.trustedProxies).toEqual([]);
  });

  it('refuses to boot with NODE_ENV=production and a public JWT_SECRET or SECRETS_KEY, never quoting them', () => {
    const own = { JWT_SECRET: 'an-operator-secret-0123456789abcdef', SECRETS_KEY: 'another-operator-secret-0123456789' };
    expect(loadApiConfig({ NODE_ENV: 'production', ...own }).JWT_SECRET).toBe(own.JWT_SECRET);
    const problems = (env: NodeJS.ProcessEnv): string[] => {
      try {
        loadApiConfig(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
      return [];
    };
    for (const jwt of [undefined, 'hookline-dev-jwt-secret-change-me', 'change-me-jwt-secret-at-least-32-chars', 'EXAMPLE-ONLY-replace-with-openssl-rand-base64-32']) {
      const found = problems({ NODE_ENV: 'production', SECRETS_KEY: own.SECRETS_KEY, JWT_SECRET: jwt });
      expect(found).toEqual([expect.stringMatching(/^JWT_SECRET is .*NODE_ENV=production it must be a secret of your own/)]);
      if (jwt) expect(found.join()).not.toContain(jwt);
    }
    for (const key of [undefined, 'hookline-dev-secrets-key-change-me', 'change-me-to-a-long-random-value', 'EXAMPLE-ONLY-replace-with-openssl-rand-base64-32']) {
      expect(problems({ NODE_ENV: 'production', JWT_SECRET: own.JWT_SECRET, SECRETS_KEY: key })).toEqual([expect.stringMatching(/^SECRETS_KEY is /)]);
    }
    expect(() => loadApiConfig({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET.*SECRETS_KEY|SECRETS_KEY.*JWT_SECRET/);
    // The quick start (pnpm start) and the tests run without NODE_ENV=production: the defaults do.
    for (const env of [{}, { NODE_ENV: 'development' }, { NODE_ENV: 'test' }]) expect(loadApiConfig(env).JWT_SECRET).toBe('hookline-dev-jwt-secret-change-me');
  });

  it('reads the login limits and TRUSTED_PROXIES, naming a bad value', () => {
    const c = loadApiConfig({ LOGIN_MAX_FAILURES_PER_ACCOUNT: '5', LOGIN_MAX_FAILURES_PER_IP: '20', LOGIN_FAILURE_WINDOW_SECONDS: '60', TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8,loopback,192.0.2.1' });
    expect([c.LOGIN_MAX_FAILURES_PER_ACCOUNT, c.LOGIN_MAX_FAILURES_PER_IP, c.LOGIN_FAILURE_WINDOW_SECONDS]).toEqual([5, 20, 60]);
    expect(c.trustedProxies).toEqual(['10.0.0.0/8', 'fd00::/8', 'loopback', '192.0.2.1']);
    expect(() => loadApiConfig({ LOGIN_MAX_FAILURES_PER_ACCOUNT: '0' })).toThrow(/LOGIN_MAX_FAILURES_PER_ACCOUNT/);
    expect(() => loadApiConfig({ TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/TRUSTED_PROXIES has entries .*: 10\.0\.0\.0\/33/);
    expect(() => loadApiConfig({ TRUSTED_PROXIES: 'proxy.internal' })).toThrow(ConfigError);
  });

  it('names a bad RATE_LIMITS entry or a missing plan', () => {
    expect(() => parseRateLimits('free=100/200,pro=fast')).toThrow(/RATE_LIMITS has a bad entry "pro=fast"/);
    expect(() => parseRateLimits('free=1/2')).toThrow(ConfigError);
    // A zero is not a limit (the bucket never refills); it used to be accepted.
    for (const zero of ['free=0/5', 'free=5/0']) {
      expect(() => parseRateLimits(`${zero},pro=1/1,business=1/1,enterprise=1/1`)).toThrow(/RATE_LIMITS has a bad entry "free=[05]\/[05]" .*at least 1/);
    }
    expect(parseRateLimits('free=1/1,pro=1/1,business=1/1,enterprise=1/1').free).toEqual({ perMinute: 1, burst: 1 });
    expect(() => loadApiConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });

  it('parses DEDICATED_POOLS as the router does, and refuses a tenant named twice', () => {
    expect(loadApiConfig({}).pools.size).toBe(0);
    expect([...loadApiConfig({ DEDICATED_POOLS: 'ten_a=acme,ten_b=acme' }).pools]).toEqual([['ten_a', 'acme'], ['ten_b', 'acme']]);
    expect(() => loadApiConfig({ DEDICATED_POOLS: 'ten_a=Acme.1' })).toThrow(/DEDICATED_POOLS/);
    expect(() => loadApiConfig({ DEDICATED_POOLS: 'ten_a=acme,ten_a=beta' })).toThrow(ConfigError);
  });
});
