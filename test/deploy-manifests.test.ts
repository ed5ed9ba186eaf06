// Offline checks of the Kubernetes manifests in deploy/kustomize: rendered by a small
// kustomize (cross-checked against `kubectl kustomize`), validated against the Kubernetes
// and KEDA schemas, and checked against what the services actually read and serve.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { flushPrefix, uniquePrefix } from '@hookline/testing';
import { parseAllDocuments } from 'yaml';
import { autoscalingProblems, connectionBudget } from '../deploy/checks/autoscaling-checks';
import { kustomizeBuild, objectKey, REPO_ROOT, type K8sObject } from '../deploy/checks/kustomize-lite';
import { envContractProblems, hardeningProblems, imageProblems, migrationProblems, probeProblems, schemaProblems, selectorProblems, shutdownProblems } from '../deploy/checks/manifest-checks';
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

  test('a required variable that is missing, and a Secret key that does not exist', async () => {
    const problems = await broken((o) => {
      delete data(find(o, 'Secret', 'hookline-edge')).CLUSTER_KEY;
      delete data(find(o, 'Secret', 'hookline-secrets')).DATABASE_URL;
    }, EXAMPLE);
    expect(problems.join('\n')).toMatch(/must have required property 'CLUSTER_KEY'/);
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
