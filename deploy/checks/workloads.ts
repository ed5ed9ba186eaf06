// The Deployments and Jobs of a rendered output, each with the process it runs, that
// process's env contract and the environment the manifests give it.
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { K8sObject } from './kustomize-lite';
import { containerEnv, type ResolvedEnv } from './pod-env';
import { contractFor, EDGE_CONTRACT, serviceOfEntry, type ProcessContract } from './process-env';

export interface Workload {
  kind: 'Deployment' | 'Job';
  name: string;
  namespace: string | undefined;
  object: K8sObject;
  pod: IPodSpec;
  podLabels: Record<string, string>;
  /** One per container and init container. */
  processes: Process[];
}

export interface Process {
  container: IContainer;
  init: boolean;
  /** `services/<name>/src/main.ts`, `scripts/migrate.ts`, … or `hookline-edge`. */
  entry: string;
  /** `api`, `ingest`, `router`, `deliverer` for the four services. */
  service?: string;
  contract?: ProcessContract;
  contractError?: string;
  resolved: ResolvedEnv;
}

function isEdge(c: IContainer): boolean {
  return /hookline-edge/.test(c.image ?? '');
}

async function process(objects: K8sObject[], c: IContainer, init: boolean, ns: string | undefined): Promise<Process> {
  const resolved = containerEnv(objects, c, ns);
  if (isEdge(c)) return { container: c, init, entry: 'hookline-edge', contract: EDGE_CONTRACT, resolved };
  const entry = c.args?.[0] ?? c.command?.[0] ?? '(none)';
  const service = serviceOfEntry(entry);
  try {
    return { container: c, init, entry, service, contract: await contractFor(entry), resolved };
  } catch (err) {
    return { container: c, init, entry, service, contractError: (err as Error).message, resolved };
  }
}

export async function workloads(objects: K8sObject[]): Promise<Workload[]> {
  const out: Workload[] = [];
  for (const o of objects) {
    if (o.kind !== 'Deployment' && o.kind !== 'Job') continue;
    const template = (o as unknown as IDeployment | IJob).spec?.template;
    const pod = template?.spec;
    if (!pod) throw new Error(`${o.kind}/${o.metadata.name} has no pod template`);
    const ns = o.metadata.namespace;
    const processes = [
      ...(await Promise.all((pod.initContainers ?? []).map((c) => process(objects, c, true, ns)))),
      ...(await Promise.all(pod.containers.map((c) => process(objects, c, false, ns)))),
    ];
    out.push({ kind: o.kind, name: o.metadata.name, namespace: ns, object: o, pod, podLabels: template.metadata?.labels ?? {}, processes });
  }
  return out;
}

/** The main container of a workload (the one that is not an init container). */
export function mainProcess(w: Workload): Process {
  const main = w.processes.filter((p) => !p.init);
  if (main.length !== 1) throw new Error(`${w.kind}/${w.name} must run exactly one container (has ${main.length})`);
  return main[0]!;
}
