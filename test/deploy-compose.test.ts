// Offline checks of docker-compose.yml and the Dockerfile (no Docker engine needed):
// every container runs an entry that exists with the variables it reads, in the right
// order, with Redis configured for BullMQ and the edge agent kept in its own networks.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  composeEdgeProblems,
  composeOrderProblems,
  composeProcessProblems,
  composeRedisProblems,
  dockerfileProblems,
  imageEnv,
  startScriptProblems,
  interpolate,
  readCompose,
  uncopied,
  type ComposeFile,
} from '../deploy/checks/compose-checks';
import { kustomizeBuild, REPO_ROOT } from '../deploy/checks/kustomize-lite';
import { GAP_CAPABILITIES } from '../packages/evidence/src/discovery/gap-capabilities';
import { RUNTIME_CAPABILITIES } from '../packages/evidence/src/discovery/runtime-capabilities';
import { TRUST_CAPABILITIES } from '../packages/evidence/src/discovery/trust-capabilities';
import { workloads } from '../deploy/checks/workloads';

const COMPOSE = resolve(REPO_ROOT, 'docker-compose.yml');
const DOCKERFILE = readFileSync(resolve(REPO_ROOT, 'Dockerfile'), 'utf8');
// What an operator gives (the environment or an .env file): compose requires these two.
const OPERATOR = { SECRETS_KEY: 'operator-secrets-key-0123456789abcdef', JWT_SECRET: 'operator-jwt-secret-0123456789abcdef' };
const compose = (): ComposeFile => readCompose(COMPOSE, OPERATOR);

test('interpolation follows compose: defaults for unset variables, required ones, $$ for a dollar', () => {
  expect(interpolate('a: ${X:-d1}\nb: ${Y-d2}\nc: "${Z}"\nd: $$HOME')).toBe('a: d1\nb: d2\nc: ""\nd: $HOME');
  expect(interpolate('a: ${X:-d1}\nb: ${Y-d2}\nc: ${Z:?need Z}', { X: 'x', Y: '', Z: 'z' })).toBe('a: x\nb: \nc: z');
  expect(() => interpolate('c: ${Z:?need Z}', { Z: '' })).toThrow('required variable Z is missing a value: need Z');
  expect(interpolate('c: ${Z?need Z}', { Z: '' })).toBe('c: ');
  expect(() => interpolate('c: ${Z?need Z}')).toThrow(/required variable Z/);
});

test("compose will not start without the operator's SECRETS_KEY and JWT_SECRET (the image refuses public ones)", async () => {
  expect(() => readCompose(COMPOSE)).toThrow(/required variable (SECRETS_KEY|JWT_SECRET) is missing a value/);
  expect(() => readCompose(COMPOSE, { SECRETS_KEY: OPERATOR.SECRETS_KEY })).toThrow(/required variable JWT_SECRET is missing a value/);
  expect(() => readCompose(COMPOSE, { JWT_SECRET: OPERATOR.JWT_SECRET })).toThrow(/required variable SECRETS_KEY is missing a value/);
  const c = compose();
  expect(c.services.api!.environment).toMatchObject(OPERATOR);
  for (const s of ['ingest', 'router', 'deliverer']) expect(c.services[s]!.environment).toMatchObject({ SECRETS_KEY: OPERATOR.SECRETS_KEY });
  // The image runs with NODE_ENV=production, and the checks run each process with it: the
  // public values compose used to default to would stop the services.
  expect(imageEnv(DOCKERFILE)).toMatchObject({ NODE_ENV: 'production' });
  c.services.api!.environment = { ...c.services.api!.environment, JWT_SECRET: 'change-me-jwt-secret-at-least-32-chars' };
  c.services.router!.environment = { ...c.services.router!.environment, SECRETS_KEY: 'change-me-to-a-long-random-value' };
  const text = (await composeProcessProblems(c)).join('\n');
  expect(text).toMatch(/api: services\/api\/src\/main\.ts: JWT_SECRET is a published example value: with NODE_ENV=production/);
  expect(text).toMatch(/router: services\/router\/src\/main\.ts: SECRETS_KEY is a published example value/);
  expect(await composeProcessProblems(c, {})).toEqual([]);
});

test('the four services, the migration and the edge agent are all there', () => {
  const c = compose();
  expect(Object.keys(c.services).sort()).toEqual(['api', 'deliverer', 'edge', 'ingest', 'migrate', 'postgres', 'redis', 'router']);
  for (const s of ['api', 'ingest', 'router', 'deliverer']) expect(c.services[s]?.command).toEqual([`services/${s}/src/main.ts`]);
});

test('every container runs an existing entry with valid variables it reads, on the port it publishes', async () => {
  expect(await composeProcessProblems(compose())).toEqual([]);
});

test('services start after the migration completed and Redis is healthy', () => {
  expect(composeOrderProblems(compose())).toEqual([]);
});

test('Redis never evicts and keeps an append-only file', () => {
  expect(composeRedisProblems(compose())).toEqual([]);
});

test('the edge agent is built from its own Dockerfile, shares no network with PostgreSQL or Redis and has a private one', () => {
  const edge = compose().services.edge!;
  expect({ image: edge.image, build: edge.build, command: edge.command }).toEqual({ image: 'hookline-edge:latest', build: { context: '.', dockerfile: 'packages/edge/Dockerfile' }, command: undefined });
  expect(composeEdgeProblems(compose())).toEqual([]);
});

test('the image contains every entry file that compose and the manifests run', async () => {
  const fromCompose = Object.values(compose().services).flatMap((s) => (s.image === 'hookline:latest' ? (s.command ?? []).slice(0, 1) : []));
  const fromK8s = (await workloads(kustomizeBuild(resolve(REPO_ROOT, 'deploy/kustomize/base')))).flatMap((w) => w.processes.map((p) => p.entry));
  const entries = [...new Set([...fromCompose, ...fromK8s])].sort();
  expect(entries).toContain('deploy/scripts/wait-for-migrations.ts');
  expect(dockerfileProblems(DOCKERFILE, entries)).toEqual([]);
});

test("pnpm start:<service> runs the bundle with the service's V8 flags, as the image and manifests do", () => {
  const pkg = JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(startScriptProblems(pkg.scripts, ['api', 'ingest', 'router', 'deliverer'])).toEqual([]);
  const broken = { ...pkg.scripts, 'start:router': pkg.scripts['start:router']!.replace(/ --max-semi-space-size=\d+/, '') };
  expect(startScriptProblems(broken, ['router'])).toEqual([
    'package.json: start:router must end with `&& node --max-old-space-size=256 --max-semi-space-size=8 scripts/launch.cjs services/router/src/main.ts`',
  ]);
  const plain = { ...pkg.scripts, 'start:deliverer': pkg.scripts['start:deliverer']!.replace('--max-semi-space-size=16', '--max-semi-space-size=8') };
  expect(startScriptProblems(plain, ['deliverer'])).toEqual([
    'package.json: start:deliverer must end with `&& node --max-old-space-size=256 --max-semi-space-size=16 scripts/launch.cjs services/deliverer/src/main.ts`',
  ]);
});

describe('the checks find a broken compose file', () => {
  test('unread or invalid variables, a wrong port, a missing entry, a short grace period', async () => {
    const c = compose();
    c.services.router!.environment = { ...c.services.router!.environment, JWT_SECRET: 'x'.repeat(20) };
    c.services.ingest!.ports = ['8081:9000'];
    c.services.api!.environment = { ...c.services.api!.environment, LOG_LEVEL: 'loud' };
    c.services.deliverer!.stop_grace_period = '10s';
    c.services.migrate!.command = ['scripts/migrat.ts'];
    const text = (await composeProcessProblems(c)).join('\n');
    expect(text).toMatch(/router: JWT_SECRET is set but services\/router\/src\/main\.ts does not read it/);
    expect(text).toMatch(/ingest: publishes 8081:9000 but listens on 8081/);
    expect(text).toMatch(/api: services\/api\/src\/main\.ts: LOG_LEVEL must be equal to one of the allowed values/);
    expect(text).toMatch(/deliverer: stop_grace_period 10s must exceed SHUTDOWN_TIMEOUT_MS 20000/);
    expect(text).toMatch(/migrate: scripts\/migrat\.ts does not exist/);
  });

  test('no wait for the migration, an evicting Redis, an edge agent beside the data', () => {
    const c = compose();
    delete c.services.router!.depends_on!.migrate;
    c.services.redis!.command = ['redis-server', '--maxmemory-policy', 'allkeys-lru'];
    c.services.edge!.networks = ['core', 'public'];
    expect(composeOrderProblems(c)).toEqual(['router: must depend on migrate with condition service_completed_successfully']);
    expect(composeRedisProblems(c)).toEqual(['redis: --maxmemory-policy must be noeviction', 'redis: --appendonly must be yes']);
    expect(composeEdgeProblems(c)).toEqual(['edge: shares network core with PostgreSQL or Redis', 'edge: needs an internal (private) network for its targets']);
  });

  test("an edge agent given what it does not read, an invalid value, or the services' image", async () => {
    const c = compose();
    c.services.edge!.environment = { ...c.services.edge!.environment, DATABASE_URL: 'postgresql://x/y', EDGE_MAX_IN_FLIGHT: '0' };
    c.services.edge!.build = '.';
    const text = (await composeProcessProblems(c)).join('\n');
    expect(text).toMatch(/edge: DATABASE_URL is set but hookline-edge does not read it/);
    expect(text).toMatch(/edge: hookline-edge: EDGE_MAX_IN_FLIGHT must be >= 1/);
    expect(composeEdgeProblems(c)).toEqual(['edge: must be built from packages/edge/Dockerfile with the repository as context']);
  });

  test("a deliverer without its own V8 flags, a router with the deliverer's", async () => {
    const c = compose();
    const deliverer = { ...c.services.deliverer!.environment };
    delete deliverer.NODE_OPTIONS;
    c.services.deliverer!.environment = deliverer;
    c.services.router!.environment = { ...c.services.router!.environment, NODE_OPTIONS: '--max-old-space-size=256 --max-semi-space-size=16' };
    expect(await composeProcessProblems(c)).toEqual([
      'router: NODE_OPTIONS is "--max-old-space-size=256 --max-semi-space-size=16", must be "--max-old-space-size=256 --max-semi-space-size=8" (nodeOptionsFor in scripts/lib/entries.ts)',
      'deliverer: NODE_OPTIONS is "--max-old-space-size=256 --max-semi-space-size=8" (the image\'s default), must be "--max-old-space-size=256 --max-semi-space-size=16" (nodeOptionsFor in scripts/lib/entries.ts)',
    ]);
  });

  test('an image without the services\' V8 flags', () => {
    expect(dockerfileProblems(DOCKERFILE.replace(/^ENV NODE_OPTIONS=.*$/m, ''), [])).toEqual([
      'Dockerfile: the final stage must set ENV NODE_OPTIONS="--max-old-space-size=256 --max-semi-space-size=8" (SERVICE_NODE_OPTIONS in scripts/lib/entries.ts)',
    ]);
  });

  test("the image holds every file the discovery documents' proof statuses rest on, so a container reports what a checkout does", () => {
    const files = [...RUNTIME_CAPABILITIES, ...TRUST_CAPABILITIES, ...GAP_CAPABILITIES].flatMap((d) => [...d.proofs.map((p) => p.file), ...d.implementation]);
    expect(files.filter((f) => f.startsWith('test/')).length).toBeGreaterThan(10);
    expect(uncopied(DOCKERFILE, files)).toEqual([]);
    expect(uncopied(DOCKERFILE.replace(/^COPY test .*$/m, ''), files).filter((f) => f.startsWith('test/')).length).toBeGreaterThan(10);
  });

  test('an entry the image does not contain', () => {
    expect(dockerfileProblems(DOCKERFILE.replace(/^COPY deploy\/scripts .*$/m, ''), ['deploy/scripts/wait-for-migrations.ts'])).toEqual([
      'Dockerfile: deploy/scripts/wait-for-migrations.ts is not copied into the image',
    ]);
  });
});
