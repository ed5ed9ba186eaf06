// What each process of the image reads from its environment, taken from the code itself
// (services/<name>/src/config.ts and every other schema the service's code passes to
// loadConfig), so the manifests and docker-compose.yml can be checked
// against it: every variable a process requires is given, every variable given is read,
// and every value passes the process's own validation.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { baseEnv, ConfigError, loadConfig, type EnvSchema } from '@hookline/config';
import { edgeAgentEnv } from '../../packages/edge/src/config';
import { waitEnv } from '../scripts/wait-for-migrations';
import { nodeOptionsFor, SERVICE_NODE_OPTIONS } from '../../scripts/lib/entries';
import { REPO_ROOT } from './kustomize-lite';

export interface ProcessContract {
  /** The entry file the image runs (`args[0]` / compose `command[0]`). */
  entry: string;
  schema: EnvSchema;
  /** Extra validation the process does at boot beyond the schema (e.g. loadApiConfig). */
  load?: (env: NodeJS.ProcessEnv) => unknown;
}

const ENV_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

function isEnvSchema(v: unknown): v is EnvSchema {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  const entries = Object.values(v as Record<string, unknown>);
  return entries.length > 0 && entries.every((e) => !!e && typeof e === 'object' && ENV_TYPES.has(String((e as { type?: unknown }).type)));
}

export interface LoadedSchema {
  /** The file that calls loadConfig, relative to the repository. */
  file: string;
  /** The name it passes. */
  name: string;
  schema: EnvSchema;
}

/** Non-test TypeScript files under `dir` (test helpers in `testing/` left out). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'testing' ? [] : sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

function resolveModule(specifier: string, fromFile: string): string {
  if (!specifier.startsWith('.')) return require.resolve(specifier, { paths: [dirname(fromFile)] });
  const base = resolve(dirname(fromFile), specifier);
  const found = [`${base}.ts`, join(base, 'index.ts'), base].find((f) => existsSync(f));
  if (!found) throw new Error(`${relative(REPO_ROOT, fromFile)}: cannot resolve ${specifier}`);
  return found;
}

/** The module and export name behind `ident` as `file` sees it (imported, or exported by the file itself). */
function whereDefined(file: string, text: string, ident: string): { module: string; exported: string } {
  for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)) {
    for (const part of m[1]!.split(',')) {
      const [exported, local = exported] = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/);
      if (exported && local === ident) return { module: resolveModule(m[2]!, file), exported };
    }
  }
  const at = relative(REPO_ROOT, file);
  if (new RegExp(`\\bexport\\s+const\\s+${ident}\\b`).test(text)) {
    // Importing a main.ts would start the service.
    if (basename(file) === 'main.ts') throw new Error(`${at}: define ${ident} outside main.ts (in config.ts) so that the deploy checks can read it`);
    return { module: file, exported: ident };
  }
  throw new Error(`${at}: cannot tell where ${ident}, passed to loadConfig, is defined`);
}

/**
 * Every env schema that the code under `srcDir` passes to loadConfig, resolved to the
 * exported object it names. A service may read more than its config.ts: the api's edge
 * endpoints read the delivery policy and their own variables (services/api/src/edge).
 */
export async function schemasLoadedIn(srcDir: string): Promise<LoadedSchema[]> {
  const out: LoadedSchema[] = [];
  for (const file of sourceFiles(srcDir)) {
    const text = readFileSync(file, 'utf8');
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
    for (const m of code.matchAll(/(?<!function\s+)\bloadConfig\(\s*([^\s,)]*)/g)) {
      const arg = m[1] ?? '';
      const at = relative(REPO_ROOT, file);
      if (!/^[A-Za-z_$][\w$]*$/.test(arg)) throw new Error(`${at}: loadConfig(${arg}…) must be given a named, exported schema, so that the deploy checks can read it`);
      const { module, exported } = whereDefined(file, text, arg);
      const schema = ((await import(module)) as Record<string, unknown>)[exported];
      if (!isEnvSchema(schema)) throw new Error(`${at}: ${arg}, passed to loadConfig, is not an env schema`);
      out.push({ file: at, name: arg, schema });
    }
  }
  return out;
}

/** One schema of several; a variable defined twice must be defined the same way. */
function mergeSchemas(parts: { from: string; schema: EnvSchema }[]): EnvSchema {
  const merged: EnvSchema = {};
  const source: Record<string, string> = {};
  for (const { from, schema } of parts) {
    for (const [k, v] of Object.entries(schema)) {
      if (merged[k] && JSON.stringify(merged[k]) !== JSON.stringify(v)) throw new Error(`${k} is defined differently by ${source[k]} and ${from}`);
      merged[k] = v;
      source[k] ??= from;
    }
  }
  return merged;
}

/**
 * What a service reads: the env schema its config.ts exports (the one exported object of
 * `{ NAME: { type, default? } }` entries that extends baseEnv; an error names the exports
 * when there is none or more than one), plus every other schema its code passes to
 * loadConfig (schemasLoadedIn).
 */
export async function serviceContract(name: string): Promise<ProcessContract> {
  const entry = `services/${name}/src/main.ts`;
  const configFile = resolve(REPO_ROOT, `services/${name}/src/config.ts`);
  if (!existsSync(configFile)) throw new Error(`services/${name}/src/config.ts does not exist`);
  const mod = (await import(configFile)) as Record<string, unknown>;
  const schemas = Object.entries(mod).filter(([, v]) => isEnvSchema(v) && Object.keys(baseEnv).every((k) => k in (v as EnvSchema)));
  if (schemas.length !== 1) {
    throw new Error(`services/${name}/src/config.ts must export exactly one env schema extending baseEnv; found ${schemas.map(([k]) => k).join(', ') || 'none'} among ${Object.keys(mod).join(', ')}`);
  }
  const loaders = Object.entries(mod).filter(([k, v]) => /^load\w*Config$/.test(k) && typeof v === 'function');
  const loader = loaders[0]?.[1] as ((env: NodeJS.ProcessEnv) => unknown) | undefined;
  const loaded = await schemasLoadedIn(resolve(REPO_ROOT, `services/${name}/src`));
  const schema = mergeSchemas([
    { from: `services/${name}/src/config.ts ${schemas[0]![0]}`, schema: schemas[0]![1] as EnvSchema },
    ...loaded.map((l) => ({ from: `${l.file} ${l.name}`, schema: l.schema })),
  ]);
  return { entry, schema, load: loader };
}

/** `api`, `ingest`, … for a service's entry (`services/<name>/src/main.ts`), else undefined. */
export function serviceOfEntry(entry: string): string | undefined {
  return /^services\/([a-z-]+)\/src\/main\.ts$/.exec(entry)?.[1];
}

/** The contract of any entry file the manifests may run. */
export async function contractFor(entry: string): Promise<ProcessContract> {
  if (!existsSync(resolve(REPO_ROOT, entry))) throw new Error(`${entry} does not exist in the repository`);
  const service = serviceOfEntry(entry);
  if (service) return serviceContract(service);
  // scripts/migrate.ts reads only DATABASE_URL (loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL })).
  if (entry === 'scripts/migrate.ts') return { entry, schema: { DATABASE_URL: baseEnv.DATABASE_URL } };
  if (entry === 'deploy/scripts/wait-for-migrations.ts') return { entry, schema: waitEnv };
  throw new Error(`${entry} is not a known Hookline entry point`);
}

/** The hookline-edge agent's contract: its own exported schema (packages/edge/src/config.ts). */
export const EDGE_CONTRACT: ProcessContract = { entry: 'hookline-edge', schema: edgeAgentEnv };

/** Read by Node itself, not by the process's code. */
const RUNTIME_ENV = new Set(['NODE_OPTIONS']);

/**
 * A service runs with its V8 flags (nodeOptionsFor in scripts/lib/entries.ts): its own
 * NODE_OPTIONS where it sets one, else the image's `ENV NODE_OPTIONS` (SERVICE_NODE_OPTIONS).
 */
export function nodeOptionsProblems(entry: string, env: Record<string, string>): string[] {
  if (!serviceOfEntry(entry)) return [];
  const given = env.NODE_OPTIONS ?? SERVICE_NODE_OPTIONS;
  const want = nodeOptionsFor(entry);
  if (given === want) return [];
  return [`NODE_OPTIONS is "${given}"${env.NODE_OPTIONS === undefined ? " (the image's default)" : ''}, must be "${want}" (nodeOptionsFor in scripts/lib/entries.ts)`];
}

/**
 * Problems with `env` for a process: unread variables, missing or invalid values, wrong V8
 * flags. `runtime` is what the image sets (its `ENV`, e.g. NODE_ENV): the process runs with
 * it beneath `env`, but it is not checked as a variable the container is given.
 */
export function envProblems(contract: ProcessContract, env: Record<string, string>, runtime: Record<string, string> = {}): string[] {
  const problems = Object.keys(env)
    .filter((k) => !(k in contract.schema) && !RUNTIME_ENV.has(k))
    .map((k) => `${k} is set but ${contract.entry} does not read it`);
  problems.push(...nodeOptionsProblems(contract.entry, env));
  const full = { ...runtime, ...env };
  try {
    loadConfig(contract.schema, full);
    contract.load?.(full);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems.map((p) => `${contract.entry}: ${p}`));
  }
  return problems;
}

/**
 * The configuration the process would run with (defaults applied), or null when it would
 * not start (envProblems reports why; the other checks skip it).
 */
export function effectiveConfig(contract: ProcessContract | undefined, env: Record<string, string>): Record<string, string | number | boolean> | null {
  if (!contract) return null;
  try {
    return loadConfig(contract.schema, env) as Record<string, string | number | boolean>;
  } catch (err) {
    if (err instanceof ConfigError) return null;
    throw err;
  }
}
