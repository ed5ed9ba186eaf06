// Autoscaling checks: CPU HPAs for the HTTP services, KEDA ScaledObjects on the BullMQ
// wait list for the workers, and the PostgreSQL connection budget they imply.
import Ajv from 'ajv';
import { parseDeliverQueues, QUEUES, type QueueName } from '@hookline/queues';
import type { K8sObject } from './kustomize-lite';
import { effectiveConfig } from './process-env';
import { mainProcess, type Workload } from './workloads';

/** How each service scales; the workers name the queue they consume (docs/architecture.md). */
export const SCALING: Record<string, { hpa: true } | { queue: QueueName }> = {
  api: { hpa: true },
  ingest: { hpa: true },
  router: { queue: 'route' },
  deliverer: { queue: 'deliver' },
};

/** PostgreSQL pools a process opens of DB_POOL_MAX each: the api has Prisma + raw pg. */
export const POOLS_PER_PROCESS: Record<string, number> = { api: 2 };

/** Connections a process opens besides its DB_POOL_MAX pools: the api's claim pool (Idempotency-Key heartbeats, 2). */
export const FIXED_CONNECTIONS_PER_PROCESS: Record<string, number> = { api: 2 };

/** The fields of a ScaledObject that these manifests use, and what they must look like. */
const scaledObjectSchema = {
  type: 'object',
  required: ['scaleTargetRef', 'minReplicaCount', 'maxReplicaCount', 'triggers'],
  properties: {
    scaleTargetRef: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    minReplicaCount: { type: 'integer', minimum: 1 },
    maxReplicaCount: { type: 'integer', minimum: 1 },
    triggers: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['type', 'metadata'],
        additionalProperties: false,
        properties: {
          type: { type: 'string', enum: ['redis', 'redis-cluster'] },
          authenticationRef: { type: 'object', required: ['name'] },
          metadata: {
            type: 'object',
            required: ['listName', 'listLength'],
            additionalProperties: false,
            oneOf: [{ required: ['address'] }, { required: ['addresses'] }],
            properties: {
              address: { type: 'string', pattern: '^[^:/\\s]+:\\d+$' },
              addresses: { type: 'string', pattern: '^[^:/\\s]+:\\d+(,[^:/\\s]+:\\d+)*$' },
              databaseIndex: { type: 'string', pattern: '^\\d+$' },
              listName: { type: 'string', minLength: 1 },
              listLength: { type: 'string', pattern: '^[1-9]\\d*$' },
              activationListLength: { type: 'string', pattern: '^\\d+$' },
              enableTLS: { type: 'string', enum: ['true', 'false'] },
            },
          },
        },
      },
    },
  },
} as const;

const validateScaledObject = new Ajv({ allErrors: true }).compile(scaledObjectSchema);

interface Trigger {
  type: string;
  metadata: Record<string, string>;
}
interface ScaledObjectSpec {
  scaleTargetRef: { name: string };
  minReplicaCount: number;
  maxReplicaCount: number;
  triggers: Trigger[];
}
interface HpaSpec {
  scaleTargetRef: { kind: string; name: string };
  minReplicas?: number;
  maxReplicas: number;
  metrics?: { type: string; resource?: { name: string } }[];
}

function targets(objects: K8sObject[], kind: string, name: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind && (o.spec as { scaleTargetRef?: { name?: string } }).scaleTargetRef?.name === name);
}

function workerProblems(w: Workload, objects: K8sObject[], queue: QueueName): string[] {
  const at = `Deployment/${w.name}`;
  const sos = targets(objects, 'ScaledObject', w.name);
  if (sos.length !== 1) return [`${at}: scaled by ${sos.length} ScaledObjects, want 1`];
  const so = sos[0]!;
  if (!validateScaledObject(so.spec)) return (validateScaledObject.errors ?? []).map((e) => `ScaledObject/${so.metadata.name}${e.instancePath}: ${e.message}`);
  const spec = so.spec as unknown as ScaledObjectSpec;
  const p = mainProcess(w);
  const config = effectiveConfig(p.contract, p.resolved.env);
  if (!config) return [];
  const redis = new URL(String(config.REDIS_URL));
  // A deliverer consumes the queues DELIVER_QUEUES names (a dedicated pool: deliver.<pool>).
  const names = queue === 'deliver' && config.DELIVER_QUEUES !== undefined ? parseDeliverQueues(String(config.DELIVER_QUEUES)).map((q) => q.queue) : [QUEUES[queue].name];
  const wantLists = names.map((n) => `${String(config.QUEUE_PREFIX)}:${n}:wait`);
  const problems: string[] = [];
  if (spec.maxReplicaCount < spec.minReplicaCount) problems.push(`ScaledObject/${so.metadata.name}: maxReplicaCount < minReplicaCount`);
  for (const list of wantLists) {
    if (!spec.triggers.some((t) => t.metadata.listName === list)) problems.push(`ScaledObject/${so.metadata.name}: no trigger on ${list}, which ${w.name} consumes`);
  }
  for (const t of spec.triggers) {
    if (!wantLists.includes(t.metadata.listName ?? '')) problems.push(`ScaledObject/${so.metadata.name}: listName ${t.metadata.listName}, but ${w.name} consumes ${wantLists.join(', ')}`);
    if (t.type === 'redis' && t.metadata.address !== `${redis.hostname}:${redis.port || '6379'}`) problems.push(`ScaledObject/${so.metadata.name}: address ${t.metadata.address} is not the REDIS_URL host ${redis.host}`);
    const db = redis.pathname.replace('/', '') || '0';
    if ((t.metadata.databaseIndex ?? '0') !== db) problems.push(`ScaledObject/${so.metadata.name}: databaseIndex ${t.metadata.databaseIndex} is not the REDIS_URL database ${db}`);
  }
  return problems;
}

function hpaProblems(w: Workload, objects: K8sObject[]): string[] {
  const hpas = targets(objects, 'HorizontalPodAutoscaler', w.name);
  if (hpas.length !== 1) return [`Deployment/${w.name}: scaled by ${hpas.length} HPAs, want 1`];
  const h = hpas[0]!;
  const spec = h.spec as unknown as HpaSpec;
  const problems: string[] = [];
  if (h.apiVersion !== 'autoscaling/v2') problems.push(`HPA/${h.metadata.name}: use autoscaling/v2`);
  if (!spec.metrics?.some((m) => m.type === 'Resource' && m.resource?.name === 'cpu')) problems.push(`HPA/${h.metadata.name}: no CPU metric`);
  if ((spec.minReplicas ?? 1) < 2) problems.push(`HPA/${h.metadata.name}: an HTTP service needs minReplicas >= 2 to survive one pod's loss`);
  if (spec.maxReplicas < (spec.minReplicas ?? 1)) problems.push(`HPA/${h.metadata.name}: maxReplicas < minReplicas`);
  return problems;
}

export function autoscalingProblems(wls: Workload[], objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const names = new Set(wls.filter((w) => w.kind === 'Deployment').map((w) => w.name));
  for (const o of objects.filter((x) => x.kind === 'ScaledObject' || x.kind === 'HorizontalPodAutoscaler')) {
    const target = (o.spec as { scaleTargetRef?: { name?: string } }).scaleTargetRef?.name ?? '';
    if (!names.has(target)) problems.push(`${o.kind}/${o.metadata.name}: targets ${target}, which is not a Deployment here`);
  }
  for (const w of wls.filter((x) => x.kind === 'Deployment')) {
    const service = mainProcess(w).service;
    const rule = service ? SCALING[service] : undefined;
    if (!rule) continue;
    problems.push(...('hpa' in rule ? hpaProblems(w, objects) : workerProblems(w, objects, rule.queue)));
    if ((w.object.spec as { replicas?: number }).replicas !== undefined) problems.push(`Deployment/${w.name}: sets spec.replicas, which fights its autoscaler on every apply`);
  }
  return problems;
}

/** Worst case PostgreSQL connections: every autoscaled Deployment at its maximum. */
export function connectionBudget(wls: Workload[], objects: K8sObject[]): { total: number; lines: string[] } {
  let total = 0;
  const lines: string[] = [];
  for (const w of wls) {
    const p = mainProcess(w);
    const config = effectiveConfig(p.contract, p.resolved.env);
    if (!config || config.DATABASE_URL === undefined) continue;
    const pool = config.DB_POOL_MAX !== undefined ? Number(config.DB_POOL_MAX) * (POOLS_PER_PROCESS[p.service ?? ''] ?? 1) + (FIXED_CONNECTIONS_PER_PROCESS[p.service ?? ''] ?? 0) : 1;
    const hpa = targets(objects, 'HorizontalPodAutoscaler', w.name)[0]?.spec as unknown as HpaSpec | undefined;
    const so = targets(objects, 'ScaledObject', w.name)[0]?.spec as unknown as ScaledObjectSpec | undefined;
    const replicas = hpa?.maxReplicas ?? so?.maxReplicaCount ?? (w.object.spec as { replicas?: number }).replicas ?? 1;
    total += pool * replicas;
    lines.push(`${w.name}: ${replicas} x ${pool}`);
  }
  return { total, lines };
}
