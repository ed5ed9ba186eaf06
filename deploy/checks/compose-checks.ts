// Checks of docker-compose.yml without a Docker engine: the file is interpolated the way
// compose does it with no variables set (`${VAR:-default}` -> default), parsed with merge
// keys, and each Hookline container is checked against the process it runs.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { ENTRIES, nodeOptionsFor, SERVICE_NODE_OPTIONS } from '../../scripts/lib/entries';
import { REPO_ROOT } from './kustomize-lite';
import { contractFor, EDGE_CONTRACT, effectiveConfig, envProblems, type ProcessContract } from './process-env';

export interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string[];
  environment?: Record<string, string | number | boolean>;
  depends_on?: Record<string, { condition?: string }>;
  networks?: string[];
  ports?: string[];
  profiles?: string[];
  healthcheck?: { test?: string[] };
  stop_grace_period?: string;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  networks?: Record<string, { internal?: boolean } | null>;
}

/**
 * Compose interpolation with the variables of `env` (default none): `${X:-d}` and `${X-d}`
 * give d when X is unset (`:-` also when empty), `${X:?msg}` and `${X?msg}` fail naming X
 * as compose does (a value the operator must give), `$$` is a `$`.
 */
export function interpolate(text: string, env: Record<string, string> = {}): string {
  return text.replace(/\$\$|\$\{([A-Z0-9_]+)(?:(:?)([-?])([^}]*))?\}/g, (m, name: string | undefined, colon: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (m === '$$') return '$';
    const value = env[name!];
    const unset = value === undefined || (colon === ':' && value === '');
    if (!unset) return value;
    if (op === '?') throw new Error(`required variable ${name} is missing a value: ${arg}`);
    return op === '-' ? arg! : '';
  });
}

export function readCompose(file: string, env: Record<string, string> = {}): ComposeFile {
  return parse(interpolate(readFileSync(file, 'utf8'), env), { merge: true }) as ComposeFile;
}

/** The `ENV` of the Dockerfile's final stage: every Hookline container runs with it (NODE_ENV=production). */
export function imageEnv(dockerfile: string): Record<string, string> {
  const runStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  return Object.fromEntries([...runStage.matchAll(/^ENV ([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)\s*$/gm)].map((m) => [m[1]!, m[2]!.replace(/^"(.*)"$/, '$1')]));
}

const stringEnv = (s: ComposeService): Record<string, string> => Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, String(v)]));

function seconds(duration: string | undefined): number {
  const m = /^(\d+)(ms|s|m)?$/.exec(duration ?? '10s');
  if (!m) return NaN;
  return Number(m[1]) * ({ ms: 0.001, s: 1, m: 60 }[m[2] ?? 's'] ?? 1);
}

/** The edge agent has an image of its own. */
const EDGE_DOCKERFILE = 'packages/edge/Dockerfile';
const isEdge = (name: string, s: ComposeService): boolean => name === 'edge' || /^hookline-edge(:|$)/.test(s.image ?? '');
const isHookline = (name: string, s: ComposeService): boolean => !isEdge(name, s) && (s.image === 'hookline:latest' || s.build !== undefined);

async function contractOf(name: string, s: ComposeService): Promise<ProcessContract> {
  if (isEdge(name, s)) return EDGE_CONTRACT;
  return contractFor(s.command?.[0] ?? '(no command)');
}

/**
 * Entry files exist, env matches each process's contract (with the image's ENV, so a public
 * secret that NODE_ENV=production refuses is found), ports and healthchecks match PORT.
 */
export async function composeProcessProblems(c: ComposeFile, image: Record<string, string> = imageEnv(readFileSync(resolve(REPO_ROOT, 'Dockerfile'), 'utf8'))): Promise<string[]> {
  const problems: string[] = [];
  for (const [name, s] of Object.entries(c.services)) {
    if (!isHookline(name, s) && !isEdge(name, s)) continue;
    let contract: ProcessContract;
    try {
      contract = await contractOf(name, s);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      continue;
    }
    const env = stringEnv(s);
    const runtime = isHookline(name, s) ? image : {};
    problems.push(...envProblems(contract, env, runtime).map((p) => `${name}: ${p}`));
    const config = effectiveConfig(contract, { ...runtime, ...env });
    if (!config || config.PORT === undefined) continue;
    for (const p of s.ports ?? []) if (!p.endsWith(`:${config.PORT}`)) problems.push(`${name}: publishes ${p} but listens on ${config.PORT}`);
    if (s.healthcheck && !s.healthcheck.test?.join(' ').includes(`127.0.0.1:${config.PORT}/readyz`)) problems.push(`${name}: the healthcheck does not ask /readyz on port ${config.PORT}`);
    if (config.SHUTDOWN_TIMEOUT_MS !== undefined && !(seconds(s.stop_grace_period) > Number(config.SHUTDOWN_TIMEOUT_MS) / 1000)) {
      problems.push(`${name}: stop_grace_period ${s.stop_grace_period ?? '10s (default)'} must exceed SHUTDOWN_TIMEOUT_MS ${config.SHUTDOWN_TIMEOUT_MS}`);
    }
  }
  return problems;
}

/** Services wait for the migration and a healthy Redis; the migration for PostgreSQL. */
export function composeOrderProblems(c: ComposeFile): string[] {
  const problems: string[] = [];
  const want = (name: string, dep: string, condition: string): void => {
    if (c.services[name]?.depends_on?.[dep]?.condition !== condition) problems.push(`${name}: must depend on ${dep} with condition ${condition}`);
  };
  for (const [name, s] of Object.entries(c.services)) {
    if (!isHookline(name, s)) continue;
    if (name === 'migrate' || s.command?.[0] === 'scripts/migrate.ts') want(name, 'postgres', 'service_healthy');
    else {
      want(name, 'migrate', 'service_completed_successfully');
      want(name, 'redis', 'service_healthy');
    }
  }
  return problems;
}

/** BullMQ's production settings: never evict keys, persist with AOF. */
export function composeRedisProblems(c: ComposeFile): string[] {
  const cmd = (c.services.redis?.command ?? []).join(' ');
  const problems: string[] = [];
  if (!/--maxmemory-policy noeviction\b/.test(cmd)) problems.push('redis: --maxmemory-policy must be noeviction');
  if (!/--appendonly yes\b/.test(cmd)) problems.push('redis: --appendonly must be yes');
  return problems;
}

/**
 * The edge agent is built from its own Dockerfile and runs only in its own networks: none
 * shared with PostgreSQL or Redis.
 */
export function composeEdgeProblems(c: ComposeFile): string[] {
  const edge = c.services.edge;
  if (!edge) return ['edge: the edge agent service is missing'];
  const problems: string[] = [];
  if (!edge.profiles?.length) problems.push('edge: must sit behind a profile (it needs an enrolled cluster\'s CLUSTER_ID and CLUSTER_KEY)');
  const build = typeof edge.build === 'string' ? { context: edge.build } : edge.build;
  const dockerfile = resolve(REPO_ROOT, build?.context ?? '.', build?.dockerfile ?? 'Dockerfile');
  if (!build || dockerfile !== resolve(REPO_ROOT, EDGE_DOCKERFILE) || !existsSync(dockerfile)) problems.push(`edge: must be built from ${EDGE_DOCKERFILE} with the repository as context`);
  const dataNets = new Set([...(c.services.postgres?.networks ?? ['default']), ...(c.services.redis?.networks ?? ['default'])]);
  for (const n of edge.networks ?? ['default']) if (dataNets.has(n)) problems.push(`edge: shares network ${n} with PostgreSQL or Redis`);
  if (!(edge.networks ?? []).some((n) => c.networks?.[n]?.internal === true)) problems.push('edge: needs an internal (private) network for its targets');
  return problems;
}

/**
 * The image builds the bundles (`pnpm build`), runs entries through scripts/launch.cjs, and
 * contains and bundles every entry file it is asked to run.
 */
export function dockerfileProblems(dockerfile: string, entries: string[]): string[] {
  const problems: string[] = [];
  if (!/^ENTRYPOINT \["node", "\/app\/scripts\/launch\.cjs"\]$/m.test(dockerfile)) problems.push('Dockerfile: ENTRYPOINT must be ["node", "/app/scripts/launch.cjs"], the manifests pass the entry file as args');
  if (!/^RUN pnpm build$/m.test(dockerfile)) problems.push('Dockerfile: must RUN pnpm build (the launcher runs the bundles in dist/)');
  const runStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  if (!runStage.includes(`\nENV NODE_OPTIONS="${SERVICE_NODE_OPTIONS}"\n`)) problems.push(`Dockerfile: the final stage must set ENV NODE_OPTIONS="${SERVICE_NODE_OPTIONS}" (SERVICE_NODE_OPTIONS in scripts/lib/entries.ts)`);
  for (const entry of entries) {
    if (!(ENTRIES as readonly string[]).includes(entry)) problems.push(`Dockerfile: ${entry} is not bundled by pnpm build (ENTRIES in scripts/lib/entries.ts)`);
  }
  return [...problems, ...uncopied(dockerfile, entries).map((entry) => `Dockerfile: ${entry} is not copied into the image`)];
}

/** Which of these repository files no `COPY` of the Dockerfile brings into the image. */
export function uncopied(dockerfile: string, files: readonly string[]): string[] {
  const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/).slice(0, -1));
  return files.filter((file) => !copied.some((src) => file === src || file.startsWith(`${src.replace(/\/$/, '')}/`)));
}

/** `pnpm start:<service>` runs the service's bundle as the image does, with the service's V8 flags. */
export function startScriptProblems(scripts: Record<string, string>, services: readonly string[]): string[] {
  const problems: string[] = [];
  for (const name of services) {
    const entry = `services/${name}/src/main.ts`;
    const want = `node ${nodeOptionsFor(entry)} scripts/launch.cjs ${entry}`;
    if (!scripts[`start:${name}`]?.endsWith(`&& ${want}`)) problems.push(`package.json: start:${name} must end with \`&& ${want}\``);
  }
  return problems;
}
