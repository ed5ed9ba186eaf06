// Offline checks of the Kubernetes manifests in deploy/kustomize: rendered by a small
// kustomize (cross-checked against `kubectl kustomize`), validated against the Kubernetes
// and KEDA schemas, and checked against what the services actually read and serve.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { flushPrefix, uniquePrefix } from '@hookline/testing';
import { parseAllDocuments } from 'yaml';
import { autoscalingProblems, connectionBudget } from '../deploy/checks/autoscaling-checks';
import { kustomizeBuild, objectKey, REPO_ROOT, type K8sObject } from '../deploy/checks/kustomize-lite';
import { envContractProblems, hardeningProblems, imageProblems, migrationProblems, poolProblems, probeProblems, publicUrlProblems, schemaProblems, secretProblems, selectorProblems, shutdownProblems } from '../deploy/checks/manifest-checks';
import { networkProblems } from '../deploy/checks/network-checks';
import { contractFor, schemasLoadedIn } from '../deploy/checks/process-env';
import { workloads, type Workload } from '../deploy/checks/workloads';

const BASE = resolve(REPO_ROOT, 'deploy/kustomize/base');
const EXAMPLE = resolve(REPO_ROOT, 'deploy/kustomize/overlays/example');
/** PostgreSQL's default max_connections (100) raised to 200, less 10 for admins and monitoring (docs/deployment.md). */
const POSTGRES_CONNECTION_BUDGET = 190;

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} is not rendered`);
  return o;
}

function allProblems(wls: Workload[], objects: K8sObject[]): string[] {
  return [
    ...schemaProblems(objects),
    ...envContractProblems(wls),
    ...probeProblems(wls),
    ...shutdownProblems(wls),
    ...hardeningProblems(wls),
    ...selectorProblems(wls, objects),
    ...migrationProblems(wls),
    ...imageProblems(wls),
    ...autoscalingProblems(wls, objects),
    ...poolProblems(wls),
    ...secretProblems(objects),
    ...publicUrlProblems(wls),
    ...networkProblems(objects),
  ];
}

describe.each([
  ['base', BASE],
  ['overlays/example', EXAMPLE],
])('deploy/kustomize/%s', (_label, dir) => {
  let objects: K8sObject[];
  let wls: Workload[];
  beforeAll(async () => {
    objects = kustomizeBuild(dir);
    wls = await workloads(objects);
  });

  test('every object passes the Kubernetes or KEDA schema of its kind', () => {
    expect(objects.length).toBeGreaterThan(10);
    expect(schemaProblems(objects)).toEqual([]);
  });

  test('the four services and the migration run, each as a Deployment or Job of an entry that exists', () => {
    const services = wls.filter((w) => w.kind === 'Deployment').map((w) => w.processes.find((p) => !p.init)?.service);
    for (const s of ['api', 'ingest', 'router', 'deliverer']) expect(services).toContain(s);
    expect(wls.filter((w) => w.kind === 'Job').map((w) => w.processes[0]?.entry)).toEqual(['scripts/migrate.ts']);
  });

  test('one image runs every Hookline process, init containers included', () => {
    expect(imageProblems(wls)).toEqual([]);
  });

  test('every process gets each variable it requires, valid, and only variables it reads', () => {
    expect(envContractProblems(wls)).toEqual([]);
  });

  test('readiness asks /readyz and liveness /healthz on the port the process listens on', () => {
    expect(probeProblems(wls)).toEqual([]);
  });

  test('the grace period outlasts preStop plus SHUTDOWN_TIMEOUT_MS', () => {
    expect(shutdownProblems(wls)).toEqual([]);
  });

  test('every container has requests and limits and runs non-root with a read-only root', () => {
    expect(hardeningProblems(wls)).toEqual([]);
  });

  test('selectors pick their own pods, every Deployment has one PDB, Services reach a container port', () => {
    expect(selectorProblems(wls, objects)).toEqual([]);
  });

  test('one migration Job, and every service pod waits for the schema of the same database', () => {
    expect(migrationProblems(wls)).toEqual([]);
  });

  test('CPU HPAs for api and ingest, KEDA on the BullMQ wait list for router and deliverer', () => {
    expect(autoscalingProblems(wls, objects)).toEqual([]);
  });

  test('router, api and deliverers read one DEDICATED_POOLS, and a deliverer consumes every queue it names', () => {
    expect(poolProblems(wls)).toEqual([]);
  });

  test('the public URLs (hook URLs, discovery links) are set, not left at a loopback default', () => {
    expect(publicUrlProblems(wls)).toEqual([]);
  });

  test('edge agents reach no worker pod (a NetworkPolicy admits none) and list their targets', () => {
    expect(objects.some((o) => o.kind === 'NetworkPolicy')).toBe(true);
    expect(networkProblems(objects)).toEqual([]);
  });

  test('the Secrets committed here hold example values only', () => {
    expect(objects.some((o) => o.kind === 'Secret')).toBe(true);
    expect(secretProblems(objects)).toEqual([]);
  });

  test(`worst-case PostgreSQL connections stay within ${POSTGRES_CONNECTION_BUDGET}`, () => {
    const { total, lines } = connectionBudget(wls, objects);
    expect(lines.length).toBeGreaterThanOrEqual(5);
    expect({ total, lines, ok: total <= POSTGRES_CONNECTION_BUDGET }).toEqual({ total, lines, ok: true });
  });

  test('kustomize-lite renders exactly what `kubectl kustomize` renders', () => {
    const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
    const theirs = parseAllDocuments(out).map((d) => d.toJS() as K8sObject);
    const byKey = (list: K8sObject[]): Record<string, K8sObject> => Object.fromEntries(list.map((o) => [objectKey(o), o]));
    expect(byKey(objects)).toEqual(byKey(theirs));
  });
});

test("docs/deployment.md's connection budget is what the manifests add up to", async () => {
  const row = /^\| \*\*total\*\* \|.*\*\*(\d+) \/ (\d+)\*\* \|$/m.exec(readFileSync(resolve(REPO_ROOT, 'docs/deployment.md'), 'utf8'));
  expect(row).not.toBeNull();
  const total = async (dir: string): Promise<number> => {
    const objects = kustomizeBuild(dir);
    return connectionBudget(await workloads(objects), objects).total;
  };
  expect({ base: await total(BASE), example: await total(EXAMPLE) }).toEqual({ base: Number(row![1]), example: Number(row![2]) });
});

describe('the example overlay', () => {
  test('puts everything namespaced in one namespace and pins the image', () => {
    const objects = kustomizeBuild(EXAMPLE);
    const namespaces = new Set(objects.filter((o) => o.kind !== 'Namespace').map((o) => o.metadata.namespace));
    expect([...namespaces]).toEqual(['hookline']);
    const images = JSON.stringify(objects).match(/"image":"[^"]+"/g) ?? [];
    expect(images.length).toBeGreaterThan(8);
    for (const image of images) expect(image).toMatch(/"image":"registry\.example\.com\/hookline\/hookline(-edge)?:0\.1\.0"/);
  });
});

describe('the checks find broken manifests', () => {
  const broken = async (edit: (objects: K8sObject[]) => void, dir = BASE): Promise<string[]> => {
    const objects = structuredClone(kustomizeBuild(dir));
    edit(objects);
    return allProblems(await workloads(objects), objects);
  };
  const data = (o: K8sObject): Record<string, string> => (o.data ?? o.stringData) as Record<string, string>;

  test('a variable no service reads, and an invalid value', async () => {
    const problems = await broken((o) => {
      data(find(o, 'ConfigMap', 'hookline-router')).DELIVERER_CONCURRENCY = '4';
      data(find(o, 'ConfigMap', 'hookline-common')).LOG_LEVEL = 'verbose';
    });
    expect(problems.join('\n')).toMatch(/DELIVERER_CONCURRENCY is set but services\/router\/src\/main\.ts does not read it/);
    expect(problems.join('\n')).toMatch(/LOG_LEVEL must be equal to one of the allowed values/);
  });

  test("a deliverer without its own V8 flags runs with the image's default", async () => {
    const problems = await broken((o) => {
      delete data(find(o, 'ConfigMap', 'hookline-deliverer')).NODE_OPTIONS;
    });
    expect(problems).toEqual([
      'Deployment/hookline-deliverer deliverer: NODE_OPTIONS is "--max-old-space-size=256 --max-semi-space-size=8" (the image\'s default), must be "--max-old-space-size=256 --max-semi-space-size=16" (nodeOptionsFor in scripts/lib/entries.ts)',
    ]);
  });

  test('a worker pod no NetworkPolicy guards, a policy that admits edge agents, an agent with no target list', async () => {
    const spec = (o: K8sObject): Record<string, any> => o['spec'] as Record<string, any>;
    const problems = await broken((o) => {
      find(o, 'Deployment', 'hookline-router').spec = { ...spec(find(o, 'Deployment', 'hookline-router')), template: { ...spec(find(o, 'Deployment', 'hookline-router')).template, metadata: { labels: { 'app.kubernetes.io/component': 'router' } } } };
      spec(find(o, 'NetworkPolicy', 'hookline-workers')).ingress[0].from[0].podSelector = {};
      (find(o, 'ConfigMap', 'hookline-edge')['data'] as Record<string, string>).EDGE_ALLOWED_TARGETS = '';
    }, EXAMPLE);
    expect(problems.filter((p) => /NetworkPolicy|EDGE_ALLOWED_TARGETS/.test(p))).toEqual([
      'Deployment/hookline-router: no NetworkPolicy selects its pods, so an edge agent in the cluster reaches its ports',
      'Deployment/hookline-deliverer: NetworkPolicy hookline-workers admits edge agent pods',
      'Deployment/hookline-deliverer-acme: NetworkPolicy hookline-workers admits edge agent pods',
      'ConfigMap/hookline-edge: EDGE_ALLOWED_TARGETS is empty, so the agent sends to any address a tenant names',
    ]);
  });

  test('a required variable that is missing, and a Secret key that does not exist', async () => {
    const problems = await broken((o) => {
      delete data(find(o, 'Secret', 'hookline-edge')).CLUSTER_KEY;
      delete data(find(o, 'Secret', 'hookline-secrets')).DATABASE_URL;
    }, EXAMPLE);
    expect(problems.join('\n')).toMatch(/CLUSTER_KEY is required/);
    expect(problems.join('\n')).toMatch(/DATABASE_URL refers to Secret\/hookline-secrets key DATABASE_URL, which does not exist/);
  });

  test('a probe on the wrong path or port, a short grace period, a missing entry file', async () => {
    const problems = await broken((o) => {
      data(find(o, 'ConfigMap', 'hookline-ingest')).PORT = '9999';
      const api = find(o, 'Deployment', 'hookline-api') as unknown as { spec: { template: { spec: { terminationGracePeriodSeconds: number; containers: { readinessProbe: { httpGet: { path: string } }; args: string[] }[] } } } };
      api.spec.template.spec.containers[0]!.readinessProbe.httpGet.path = '/healthz';
      api.spec.template.spec.terminationGracePeriodSeconds = 12;
      (find(o, 'Deployment', 'hookline-router') as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args = ['services/routr/src/main.ts'];
    });
    const text = problems.join('\n');
    expect(text).toMatch(/hookline-ingest readinessProbe hits port 8081 but the process listens on PORT=9999/);
    expect(text).toMatch(/hookline-api readinessProbe asks \/healthz, not \/readyz/);
    expect(text).toMatch(/hookline-api: terminationGracePeriodSeconds 12 must exceed/);
    expect(text).toMatch(/services\/routr\/src\/main\.ts does not exist/);
  });

  test('an api with another DEDICATED_POOLS than the router, a pool no deliverer consumes', async () => {
    const problems = await broken((o) => {
      delete data(find(o, 'ConfigMap', 'hookline-api')).DEDICATED_POOLS;
      data(find(o, 'ConfigMap', 'hookline-deliverer-acme')).DELIVER_QUEUES = 'deliver';
    }, EXAMPLE);
    expect(problems.filter((p) => !p.startsWith('ScaledObject/'))).toEqual([
      'Deployment/hookline-api: DEDICATED_POOLS is (empty), but Deployment/hookline-router has ten_REPLACE_WITH_ACME_TENANT_ID=acme',
      'no deliverer consumes deliver.acme, where DEDICATED_POOLS sends the deliveries of ten_REPLACE_WITH_ACME_TENANT_ID',
    ]);
  });

  test("an api whose discovery documents would link to its loopback default", async () => {
    const problems = await broken((o) => {
      delete data(find(o, 'ConfigMap', 'hookline-api')).API_PUBLIC_URL;
    });
    expect(problems).toEqual(['Deployment/hookline-api: API_PUBLIC_URL is http://127.0.0.1:8080, a loopback address (its default?): set the public URL']);
  });

  test('a Secret with a value that is not an example, or without the example annotation', async () => {
    const problems = await broken((o) => {
      data(find(o, 'Secret', 'hookline-api-secrets')).JWT_SECRET = 'a-real-looking-secret-of-32-chars!';
      delete (find(o, 'Secret', 'hookline-secrets').metadata as { annotations?: Record<string, string> }).annotations;
    });
    expect(problems).toEqual([
      'Secret/hookline-secrets: must be annotated hookline.dev/example-values: "true"',
      'Secret/hookline-api-secrets: JWT_SECRET does not look like an example value (it must contain EXAMPLE)',
    ]);
  });

  test('a variable the api reads for the edge agent\'s endpoints is accepted, and validated', async () => {
    const accepted = await broken((o) => {
      Object.assign(data(find(o, 'ConfigMap', 'hookline-api')), { EDGE_LEASE_MS: '90000', DELIVERY_MAX_ATTEMPTS: '8', EDGE_CONNECTED_WINDOW_MS: '30000' });
    });
    expect(accepted).toEqual([]);
    const invalid = await broken((o) => {
      data(find(o, 'ConfigMap', 'hookline-api')).EDGE_LEASE_MS = '100';
    });
    expect(invalid).toEqual(['Deployment/hookline-api api: services/api/src/main.ts: EDGE_LEASE_MS must be >= 500 (got "100")']);
  });

  test('a ScaledObject watching another queue, a Deployment that pins replicas, a second image', async () => {
    const problems = await broken((o) => {
      const so = find(o, 'ScaledObject', 'hookline-deliverer') as unknown as { spec: { triggers: { metadata: Record<string, string> }[] } };
      so.spec.triggers[0]!.metadata.listName = '{hookline}:deliver:waiting';
      (find(o, 'Deployment', 'hookline-api').spec as { replicas?: number }).replicas = 3;
      const router = find(o, 'Deployment', 'hookline-router') as unknown as { spec: { template: { spec: { initContainers: { image: string }[] } } } };
      router.spec.template.spec.initContainers[0]!.image = 'hookline:older';
    });
    expect(problems.join('\n')).toMatch(/listName \{hookline\}:deliver:waiting, but hookline-deliverer consumes \{hookline\}:deliver:wait/);
    expect(problems.join('\n')).toMatch(/hookline-api: sets spec.replicas/);
    expect(problems.join('\n')).toMatch(/Hookline processes run 2 images: .*hookline:older \(hookline-router\/wait-for-migrations\)/);
  });
});

describe('what a service reads is every schema its code passes to loadConfig', () => {
  test('the api reads its config.ts and what its edge-agent endpoints load', async () => {
    const loaded = await schemasLoadedIn(resolve(REPO_ROOT, 'services/api/src'));
    expect(loaded.map((l) => `${l.file} ${l.name}`).sort()).toEqual([
      'services/api/src/config.ts apiEnv',
      'services/api/src/edge/cluster-status.ts edgeStatusEnv',
      'services/api/src/edge/edge-config.ts edgeEnv',
    ]);
    const { schema } = await contractFor('services/api/src/main.ts');
    for (const k of ['JWT_SECRET', 'EDGE_LEASE_MS', 'EDGE_BATCH_MAX', 'DELIVERY_MAX_ATTEMPTS', 'RETRY_SCHEDULE_MS', 'EDGE_CONNECTED_WINDOW_MS']) expect(schema).toHaveProperty(k);
  });

  test.each(['ingest', 'router', 'deliverer'])('%s: every loaded schema is in the contract', async (name) => {
    const loaded = await schemasLoadedIn(resolve(REPO_ROOT, `services/${name}/src`));
    expect(loaded.length).toBeGreaterThanOrEqual(1);
    const { schema } = await contractFor(`services/${name}/src/main.ts`);
    for (const l of loaded) for (const k of Object.keys(l.schema)) expect(schema).toHaveProperty(k);
  });

  test('a schema it cannot read is an error, not a silent gap', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookline-env-'));
    try {
      writeFileSync(join(dir, 'extra.ts'), "export const extraEnv = { EXTRA_MS: { type: 'integer', default: 5 } } as const;\nexport const read = (): unknown => loadConfig(extraEnv);\ndeclare function loadConfig(s: unknown): unknown;\n");
      writeFileSync(join(dir, 'extra.test.ts'), 'loadConfig({ ONLY_IN_A_TEST: 1 });\n');
      expect((await schemasLoadedIn(dir)).map((l) => [l.name, Object.keys(l.schema)])).toEqual([['extraEnv', ['EXTRA_MS']]]);
      writeFileSync(join(dir, 'inline.ts'), "export const read = (): unknown => loadConfig({ INLINE: { type: 'string' } });\ndeclare function loadConfig(s: unknown): unknown;\n");
      await expect(schemasLoadedIn(dir)).rejects.toThrow(/inline\.ts: loadConfig\(\{…\) must be given a named, exported schema/);
      rmSync(join(dir, 'inline.ts'));
      writeFileSync(join(dir, 'main.ts'), "export const mainEnv = { M: { type: 'string' } } as const;\nloadConfig(mainEnv);\ndeclare function loadConfig(s: unknown): unknown;\n");
      await expect(schemasLoadedIn(dir)).rejects.toThrow(/main\.ts: define mainEnv outside main\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("KEDA's listName is where BullMQ keeps waiting jobs", () => {
  const prefix = uniquePrefix('deploykeda');
  let producerRedis: Redis;
  let reader: Redis;
  let producer: Producer;
  beforeAll(() => {
    producerRedis = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'producer');
    reader = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'producer');
    producer = createProducer(producerRedis, prefix);
  });
  afterAll(async () => {
    await producer.close();
    await flushPrefix(prefix);
    producerRedis.disconnect();
    reader.disconnect();
  });

  test('LLEN of each ScaledObject listName counts waiting jobs, not delayed ones', async () => {
    await producer.add('route', { v: 1, eventIds: ['evt_a'] });
    await producer.add('route', { v: 1, eventIds: ['evt_b'] });
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_a'] });
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_b'] }, { delayMs: 60_000 });
    const lists = kustomizeBuild(BASE)
      .filter((o) => o.kind === 'ScaledObject')
      .map((o) => (o.spec as { triggers: { metadata: { listName: string } }[] }).triggers[0]!.metadata.listName);
    const lengths: Record<string, number> = {};
    for (const list of lists) lengths[list] = await reader.llen(list.replace('{hookline}', prefix));
    expect(lengths).toEqual({ '{hookline}:route:wait': 2, '{hookline}:deliver:wait': 1 });
  });
});
