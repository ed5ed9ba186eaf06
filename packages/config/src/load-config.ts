import Ajv from 'ajv';
import addFormats from 'ajv-formats';

/** One environment variable: its type, default and optional bounds. */
export type EnvVar =
  | { type: 'string'; default?: string; enum?: readonly string[]; minLength?: number; pattern?: string; description?: string }
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

const ajv = new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true });
addFormats(ajv);

/**
 * Reads the variables named in `schema` from `env` once, applies defaults, coerces
 * numbers and booleans, and throws a ConfigError naming every bad variable.
 */
export function loadConfig<S extends EnvSchema>(schema: S, env: NodeJS.ProcessEnv = process.env): ConfigOf<S> {
  const required = Object.entries(schema)
    .filter(([, v]) => v.default === undefined)
    .map(([k]) => k);
  const jsonSchema = { type: 'object', properties: schema, required, additionalProperties: true };
  const validate = ajv.compile(jsonSchema);
  const values: Record<string, unknown> = {};
  for (const key of Object.keys(schema)) {
    const raw = env[key];
    if (raw !== undefined && raw !== '') values[key] = raw;
  }
  if (!validate(values)) {
    const problems = (validate.errors ?? []).map((e) => {
      const name = e.instancePath ? e.instancePath.slice(1) : String(e.params['missingProperty'] ?? '');
      const given = env[name];
      return `${name} ${e.message ?? 'is invalid'}${given !== undefined ? ` (got "${given}")` : ''}`;
    });
    throw new ConfigError(problems);
  }
  return values as ConfigOf<S>;
}
