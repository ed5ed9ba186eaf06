// Per-pool workers: the router sends a dedicated tenant's deliveries to `deliver.<pool>`,
// only that pool's deliverer sends them (first attempts, retries and recovery), and the
// default deliverer sends everyone else's.
import { resolve } from 'node:path';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { seedTenant, startReceiver, startService, waitFor, type Receiver, type ServiceProcess } from '@hookline/testing';
import { autoscalingProblems } from '../deploy/checks/autoscaling-checks';
import { kustomizeBuild, REPO_ROOT, type K8sObject } from '../deploy/checks/kustomize-lite';
import { workloads } from '../deploy/checks/workloads';
import { createStack, type Stack } from './support/stack';
import { seedPipeline, type SeededPipeline } from './support/seed-pipeline';

jest.setTimeout(120_000);

let stack: Stack;
let rxA: Receiver;
let rxB: Receiver;
let a: SeededPipeline;
let b: SeededPipeline;
let acme: ServiceProcess | undefined;
let redis: Redis;
let queues: Producer;

beforeAll(async () => {
  rxA = await startReceiver();
  rxB = await startReceiver();
  stack = await createStack('pools', { LOG_LEVEL: 'info' }, []);
  const tenantA = (await seedTenant(stack.db.pool, { plan: 'pro' })).tenantId;
  a = await seedPipeline(stack.db.pool, `${rxA.url}/a`, tenantA);
  b = await seedPipeline(stack.db.pool, `${rxB.url}/b`);
  Object.assign(stack.env, { DEDICATED_POOLS: `${tenantA}=acme`, DELIVER_QUEUES: 'deliver' });
  await Promise.all([stack.start('ingest'), stack.start('router'), stack.start('deliverer')]);
  redis = createRedis(stack.env['REDIS_URL']!, 'producer');
  queues = createProducer(redis, stack.prefix);
});

afterAll(async () => {
  await acme?.stop();
  await queues?.close();
  redis?.disconnect();
  await stack?.close();
  await Promise.all([rxA, rxB].map((r) => r?.close()));
});

const post = async (p: SeededPipeline, n: number): Promise<string[]> => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`http://127.0.0.1:${stack.ingestPort}/in/${p.ingesterId}`, { method: 'POST', body: JSON.stringify({ i }), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(202);
    ids.push(((await res.json()) as { event_id: string }).event_id);
  }
  return ids;
};

const delivered = async (svc: ServiceProcess): Promise<number> => {
  const m = /hookline_delivery_attempts_total\{outcome="delivered",service="deliverer"\} (\d+)/.exec(await (await fetch(`${svc.url}/metrics`)).text());
  return Number(m?.[1] ?? 0);
};

test('a dedicated tenant waits for its own pool, even through recovery; everyone else is served by the default pool', async () => {
  const idsA = await post(a, 5);
  const idsB = await post(b, 5);
  await waitFor(() => rxB.requests.length === 5, { what: "B's deliveries" });
  // Once A's deliveries are older than RECOVERY_AFTER_MS (1 s), the default pool's recovery
  // sweep sees them pending and re-enqueues them, on A's queue: waited for by its log line
  // rather than a fixed sleep (a loaded machine may take longer to get there). Waited for
  // twice: a sweep re-enqueues a delivery at most once per RECOVERY_AFTER_MS, so a second
  // line means the first re-enqueued jobs sat for over a second without the default pool
  // sending them (had they gone to its queue, it would have, and A's receiver would show it).
  const sweeps = (): number => stack.services.deliverer!.output().split('re-enqueued stranded deliveries').length - 1;
  await waitFor(() => sweeps() >= 2 || rxA.requests.length > 0, { timeoutMs: 30_000, what: "the default pool's recovery sweep, twice" });
  expect(rxA.requests).toHaveLength(0);
  const { rows } = await stack.db.pool.query<{ status: string }>('SELECT d.status FROM deliveries d WHERE d.event_id = ANY($1::text[])', [idsA]);
  expect(rows.map((r) => r.status)).toEqual(idsA.map(() => 'pending'));
  expect((await queues.queue('deliver', 'acme').getJobCounts('waiting')).waiting).toBeGreaterThan(0);
  expect(stack.services.deliverer!.output()).toContain('re-enqueued stranded deliveries');
  expect(stack.services.deliverer!.output()).not.toContain('"queue":"deliver.acme"');

  acme = await startService('deliverer', { ...stack.env, DELIVER_QUEUES: 'deliver.acme', DELIVERER_CONCURRENCY: '2' });
  await waitFor(() => new Set(rxA.requests.map((r) => r.headers['x-hookline-event-id'])).size === 5, { what: "A's deliveries by the acme pool" });
  expect(new Set(rxA.requests.map((r) => r.headers['x-hookline-event-id']))).toEqual(new Set(idsA));
  expect(new Set(rxB.requests.map((r) => r.headers['x-hookline-event-id']))).toEqual(new Set(idsB));
  await waitFor(async () => (await delivered(acme!)) === 5, { what: "the acme pool's count of attempts" });
  expect(await delivered(stack.services.deliverer!)).toBe(5);
  expect(acme.output()).toContain('"queue":"deliver.acme"');
});

test("a dedicated tenant's retries stay in its pool", async () => {
  const before = await delivered(stack.services.deliverer!);
  const fromA = rxA.requests.length;
  rxA.setBehaviour((n) => ({ status: n <= fromA + 1 ? 503 : 200 }));
  const [id] = await post(a, 1);
  await waitFor(async () => {
    const { rows } = await stack.db.pool.query<{ status: string; attempt_count: number }>('SELECT status, attempt_count FROM deliveries WHERE event_id = $1', [id]);
    return rows[0]?.status === 'delivered' && rows[0].attempt_count === 2;
  }, { what: 'the retried delivery' });
  expect(await delivered(stack.services.deliverer!)).toBe(before);
  const queuesOfA = acme!.output().split('\n').filter((l) => l.includes('deliver job done') && l.includes('"delivered":1')).map((l) => JSON.parse(l).queue as string);
  expect(new Set(queuesOfA)).toEqual(new Set(['deliver.acme']));
});

test("the example overlay's acme pool consumes deliver.acme and KEDA scales it on that queue; a trigger on the shared queue is reported", async () => {
  const objects = kustomizeBuild(resolve(REPO_ROOT, 'deploy/kustomize/overlays/example'));
  const config = (name: string): Record<string, string> => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name)!.data as Record<string, string>;
  expect(config('hookline-deliverer-acme')['DELIVER_QUEUES']).toBe('deliver.acme');
  expect(config('hookline-router')['DEDICATED_POOLS']).toBe(config('hookline-deliverer')['DEDICATED_POOLS']);
  expect(autoscalingProblems(await workloads(objects), objects)).toEqual([]);

  const broken = structuredClone(objects) as K8sObject[];
  const so = broken.find((o) => o.kind === 'ScaledObject' && o.metadata.name === 'hookline-deliverer-acme')!;
  (so.spec as { triggers: { metadata: Record<string, string> }[] }).triggers[0]!.metadata['listName'] = '{hookline}:deliver:wait';
  const problems = autoscalingProblems(await workloads(broken), broken).join('\n');
  expect(problems).toMatch(/hookline-deliverer-acme: no trigger on \{hookline\}:deliver\.acme:wait/);
  expect(problems).toMatch(/listName \{hookline\}:deliver:wait, but hookline-deliverer-acme consumes \{hookline\}:deliver\.acme:wait/);
});
