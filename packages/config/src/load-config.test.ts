import { baseEnv } from './base-env';
import { ConfigError, loadConfig, type EnvSchema } from './load-config';

const schema = {
  COUNT: { type: 'integer', default: 10, minimum: 1, maximum: 100 },
  RATIO: { type: 'number', default: 1, minimum: 0, maximum: 1 },
  FLAG: { type: 'boolean', default: false },
  LEVEL: { type: 'string', default: 'info', enum: ['error', 'warn', 'info'] },
  NEEDED: { type: 'string' },
} as const satisfies EnvSchema;

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(schema, { NEEDED: 'x', ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies defaults, treats an empty value as unset, and parses numbers and booleans', () => {
    expect(loadConfig(schema, { NEEDED: 'x', COUNT: '', FLAG: '' })).toEqual({ COUNT: 10, RATIO: 1, FLAG: false, LEVEL: 'info', NEEDED: 'x' });
    expect(loadConfig(schema, { NEEDED: 'x', COUNT: ' 42 ', RATIO: '0.25', FLAG: 'true' })).toMatchObject({ COUNT: 42, RATIO: 0.25, FLAG: true });
    expect(loadConfig(schema, { NEEDED: 'x', RATIO: '.5' }).RATIO).toBe(0.5);
    expect(loadConfig(schema, { NEEDED: 'x', RATIO: '5e-1' }).RATIO).toBe(0.5);
  });

  it.each([
    ['TRUE', true], ['True', true], ['1', true], ['yes', true], ['on', true],
    ['false', false], ['FALSE', false], ['0', false], ['no', false], ['Off', false],
  ])('reads the boolean %s as %s', (raw, expected) => {
    expect(loadConfig(schema, { NEEDED: 'x', FLAG: raw }).FLAG).toBe(expected);
  });

  it.each([
    // ajv's coercion read these as 0, 16, 5, 1000 and 2^53.
    [' ', 'COUNT must be a whole number in decimal digits (got " ")'],
    ['0x10', 'COUNT must be a whole number in decimal digits (got "0x10")'],
    ['0b101', 'COUNT must be a whole number in decimal digits (got "0b101")'],
    ['1e3', 'COUNT must be a whole number in decimal digits (got "1e3")'],
    ['12.5', 'COUNT must be a whole number in decimal digits (got "12.5")'],
    ['9007199254740993', 'COUNT must be a whole number in decimal digits (got "9007199254740993")'],
    ['10s', 'COUNT must be a whole number in decimal digits (got "10s")'],
    ['0', 'COUNT must be >= 1 (got "0")'],
  ])('rejects the integer %j, naming the variable', (raw, message) => {
    expect(problems({ COUNT: raw })).toEqual([message]);
  });

  it('rejects numbers and booleans it cannot read, and names every bad variable at once', () => {
    expect(problems({ RATIO: ' ', FLAG: 'maybe', LEVEL: 'INFO' })).toEqual([
      'RATIO must be a decimal number (got " ")',
      'FLAG must be true or false (also 1/0, yes/no, on/off) (got "maybe")',
      'LEVEL must be equal to one of the allowed values: error, warn, info (got "INFO")',
    ]);
    expect(problems({ RATIO: '0x1' })).toEqual(['RATIO must be a decimal number (got "0x1")']);
    expect(problems({ RATIO: 'Infinity' })).toEqual(['RATIO must be a decimal number (got "Infinity")']);
    expect(problems({ RATIO: '2' })).toEqual(['RATIO must be <= 1 (got "2")']);
  });

  it('bounds the shutdown deadline (a timer past 2^31-1 ms would fire at once)', () => {
    expect(() => loadConfig(baseEnv, { SHUTDOWN_TIMEOUT_MS: '3000000000' })).toThrow('SHUTDOWN_TIMEOUT_MS must be <= 3600000 (got "3000000000")');
    expect(loadConfig(baseEnv, { SHUTDOWN_TIMEOUT_MS: '25000' }).SHUTDOWN_TIMEOUT_MS).toBe(25000);
  });

  it('never quotes a bad string value, which may be a secret or a URL with a password', () => {
    const secretSchema = { SECRET_KEY: { type: 'string', minLength: 32 }, DATABASE_URL: baseEnv.DATABASE_URL } as const satisfies EnvSchema;
    let message = '';
    try {
      loadConfig(secretSchema, { SECRET_KEY: 'short-but-secret', DATABASE_URL: 'mysql://app:hunter2@db/x' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/SECRET_KEY must NOT have fewer than 32 characters/);
    expect(message).toMatch(/DATABASE_URL must match/);
    expect(message).not.toContain('short-but-secret');
    expect(message).not.toContain('hunter2');
  });

  it('refuses a public value of a secret with NODE_ENV=production only (SECRETS_KEY in every service)', () => {
    const secretSchema = { KEY: { type: 'string', default: 'public-default-0123', minLength: 16, publicValues: ['public-default-0123', 'public-example-0123'] }, LEVEL: schema.LEVEL } as const satisfies EnvSchema;
    expect(loadConfig(secretSchema, {}).KEY).toBe('public-default-0123');
    expect(loadConfig(secretSchema, { NODE_ENV: 'development', KEY: 'public-example-0123' }).KEY).toBe('public-example-0123');
    expect(loadConfig(secretSchema, { NODE_ENV: 'production', KEY: 'mine-and-nobody-elses' }).KEY).toBe('mine-and-nobody-elses');
    expect(() => loadConfig(secretSchema, { NODE_ENV: 'production' })).toThrow('invalid configuration: KEY is unset (its default is public): with NODE_ENV=production it must be a secret of your own');
    expect(() => loadConfig(secretSchema, { NODE_ENV: 'production', KEY: '' })).toThrow(/KEY is unset/);
    expect(() => loadConfig(secretSchema, { NODE_ENV: 'production', KEY: 'public-example-0123' })).toThrow(/^invalid configuration: KEY is a published example value: .* must be a secret of your own/);
    expect(() => loadConfig(baseEnv, { NODE_ENV: 'production' })).toThrow(/SECRETS_KEY is unset/);
    expect(() => loadConfig(baseEnv, { NODE_ENV: 'production', SECRETS_KEY: 'change-me-to-a-long-random-value' })).toThrow(/SECRETS_KEY is a published example value/);
    expect(loadConfig(baseEnv, { NODE_ENV: 'production', SECRETS_KEY: 'x'.repeat(32) }).SECRETS_KEY).toBe('x'.repeat(32));
    // Named with every other bad variable at once.
    expect(() => loadConfig(secretSchema, { NODE_ENV: 'production', LEVEL: 'loud' })).toThrow(/^invalid configuration: LEVEL must be equal.*; KEY is unset/);
  });

  it('names a missing required variable', () => {
    expect(() => loadConfig(schema, {})).toThrow('invalid configuration: NEEDED is required');
  });

  it('checks that DATABASE_URL and REDIS_URL are URLs of the right kind, and the schema name', () => {
    const base = { DATABASE_URL: baseEnv.DATABASE_URL, REDIS_URL: baseEnv.REDIS_URL };
    const ok = (env: Record<string, string>): boolean => {
      try {
        loadConfig(base, env);
        return true;
      } catch (err) {
        expect((err as Error).message).toMatch(/^invalid configuration: (DATABASE_URL|REDIS_URL) must match/);
        return false;
      }
    };
    for (const url of ['postgresql://postgres@127.0.0.1:5432/test', 'postgres://u:p%40ss@db:5432/hookline?sslmode=require', 'postgresql://h/db?schema=hl_router_1a2b&sslmode=disable', 'postgresql:///db?host=/var/run/postgresql']) {
      expect(ok({ DATABASE_URL: url })).toBe(true);
    }
    for (const url of ['localhost:5432/test', 'foo', 'postgresql//localhost/x', 'mysql://h/db', 'postgresql://h/db?schema=a"b', 'postgresql://h/db?schema=a%22b', 'postgresql://h/db?sslmode=disable&schema=x-y']) {
      expect(ok({ DATABASE_URL: url })).toBe(false);
    }
    for (const url of ['redis://127.0.0.1:6379', 'rediss://:secret@cache.example:6380/2']) expect(ok({ REDIS_URL: url })).toBe(true);
    for (const url of ['127.0.0.1:6379', 'http://127.0.0.1:6379', 'redis://']) expect(ok({ REDIS_URL: url })).toBe(false);
  });
});
