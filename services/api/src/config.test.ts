import { ConfigError } from '@hookline/config';
import { loadApiConfig, parseRateLimits } from './config';

describe('api config', () => {
  it('has the documented defaults', () => {
    const c = loadApiConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.HOST).toBe('0.0.0.0');
    expect(c.JWT_EXPIRES_IN).toBe('1h');
    expect(c.rateLimits.free).toEqual({ perMinute: 100, burst: 200 });
  });

  it('names a bad RATE_LIMITS entry or a missing plan', () => {
    expect(() => parseRateLimits('free=100/200,pro=fast')).toThrow(/RATE_LIMITS has a bad entry "pro=fast"/);
    expect(() => parseRateLimits('free=1/2')).toThrow(ConfigError);
    expect(() => loadApiConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });

  it('parses DEDICATED_POOLS as the router does, and refuses a tenant named twice', () => {
    expect(loadApiConfig({}).pools.size).toBe(0);
    expect([...loadApiConfig({ DEDICATED_POOLS: 'ten_a=acme,ten_b=acme' }).pools]).toEqual([['ten_a', 'acme'], ['ten_b', 'acme']]);
    expect(() => loadApiConfig({ DEDICATED_POOLS: 'ten_a=Acme.1' })).toThrow(/DEDICATED_POOLS/);
    expect(() => loadApiConfig({ DEDICATED_POOLS: 'ten_a=acme,ten_a=beta' })).toThrow(ConfigError);
  });
});
