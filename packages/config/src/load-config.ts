import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';

/** One environment variable: its type, default and optional bounds. */
export type EnvVar =
  | {
      type: 'string';
      default?: string;
      enum?: readonly string[];
      minLength?: number;
      pattern?: string;
      description?: string;
      /**
       * Values of a secret that are public (its default, the examples in docker-compose.yml):
       * refused when NODE_ENV=production, where the secret must be one of the operator's own.
       */
      publicValues?: readonly string[];
    }
  | { type: 'integer'; default?: number; minimum?: number; maximum?: number; description?: string }
  | { type: 'number'; default?: number; minimum?: number; maximum?: number; description?: string }
  | { type: 'boolean'; default?: boolean; description?: string };

export type EnvSchema = Record<string, EnvVar>;

type ValueOf<V extends EnvVar> = V extends { type: 'string' }
  ? string
  : V extends { type: 'boolean' }
    ? boolean
    : number;

export type ConfigOf<S extends EnvSchema> = { readonly [K in keyof S]: ValueOf<S[K]> };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

// Numbers and booleans are parsed here, strictly; ajv only checks bounds, enums and patterns.
// (ajv's own coercion reads " " as 0 and accepts "0x10", "0b1" and "1e3" as integers.)
const ajv = new Ajv({ allErrors: true, useDefaults: true });
addFormats(ajv);

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const BOOLEANS: Record<string, boolean> = { true: true, false: false, '1': true, '0': false, yes: true, no: false, on: true, off: false };

/** The typed value of one variable, or the reason it has none. */
function parse(v: EnvVar, raw: string): { value: unknown } | { problem: string } {
  const text = raw.trim();
  switch (v.type) {
    case 'integer': {
      const n = Number(text);
      return INTEGER.test(text) && Number.isSafeInteger(n) ? { value: n } : { problem: 'must be a whole number in decimal digits' };
    }
    case 'number': {
      const n = Number(text);
      return NUMBER.test(text) && Number.isFinite(n) ? { value: n } : { problem: 'must be a decimal number' };
    }
    case 'boolean': {
      const b = BOOLEANS[text.toLowerCase()];
      return b === undefined ? { problem: 'must be true or false (also 1/0, yes/no, on/off)' } : { value: b };
    }
    default:
      return { value: raw };
  }
}

function describe(e: ErrorObject, schema: EnvSchema): { name: string; message: string } {
  const name = e.instancePath ? e.instancePath.slice(1) : String(e.params['missingProperty'] ?? '');
  const v = schema[name];
  const message = e.keyword === 'required' ? `is required${v?.description ? ` (${v.description})` : ''}` : (e.message ?? 'is invalid');
  if (e.keyword === 'enum' && v?.type === 'string' && v.enum) return { name, message: `${message}: ${v.enum.join(', ')}` };
  if (e.keyword === 'pattern' && v?.description) return { name, message: `${message} (${v.description})` };
  return { name, message };
}

/**
 * Reads the variables named in `schema` from `env` once, applies defaults, parses numbers
 * and booleans, and throws a ConfigError naming every bad variable. An empty value counts
 * as unset.
 */
export function loadConfig<S extends EnvSchema>(schema: S, env: NodeJS.ProcessEnv = process.env): ConfigOf<S> {
  const required = Object.entries(schema)
    .filter(([, v]) => v.default === undefined)
    .map(([k]) => k);
  // publicValues is ours, not JSON Schema (ajv's strict mode refuses unknown keywords).
  const properties = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, v.type === 'string' && v.publicValues ? withoutPublicValues(v) : v]));
  const jsonSchema = { type: 'object', properties, required, additionalProperties: true };
  const validate = ajv.compile(jsonSchema);
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  // A bad value is quoted only where it cannot be a secret (numbers, booleans, enumerations):
  // a string may be a key, a token or a URL with a password, and this message is logged.
  const quotable = (name: string): boolean => schema[name] !== undefined && (schema[name]!.type !== 'string' || schema[name]!.enum !== undefined);
  const got = (name: string): string => (env[name] !== undefined && quotable(name) ? ` (got "${env[name]}")` : '');
  for (const [key, v] of Object.entries(schema)) {
    const raw = env[key];
    if (raw === undefined || raw === '') continue;
    const parsed = parse(v, raw);
    if ('value' in parsed) values[key] = parsed.value;
    else problems.push(`${key} ${parsed.problem}${got(key)}`);
  }
  const valid = validate(values);
  for (const e of valid ? [] : (validate.errors ?? [])) {
    const { name, message } = describe(e, schema);
    if (!problems.some((p) => p.startsWith(`${name} `))) problems.push(`${name} ${message}${got(name)}`);
  }
  if (env['NODE_ENV']?.trim() === 'production') {
    // A secret anyone can read in this repository is no secret: a production boot needs the operator's own.
    for (const [key, v] of Object.entries(schema)) {
      if (v.type === 'string' && v.publicValues?.includes(values[key] as string) && !problems.some((p) => p.startsWith(`${key} `))) {
        problems.push(`${key} is ${env[key] ? 'a published example value' : 'unset (its default is public)'}: with NODE_ENV=production it must be a secret of your own (e.g. openssl rand -base64 32)`);
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return values as ConfigOf<S>;
}

function withoutPublicValues(v: EnvVar & { type: 'string' }): EnvVar {
  const { publicValues: _public, ...rest } = v;
  return rest;
}
