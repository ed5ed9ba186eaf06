// The environment a container would get from its envFrom and env entries, resolved
// against the ConfigMaps and Secrets of the same rendered output, the way the kubelet
// does it: envFrom sources in order (later wins), then env entries (which win).
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { K8sObject } from './kustomize-lite';

type Data = Record<string, string>;

function sourceData(objects: K8sObject[], kind: 'ConfigMap' | 'Secret', name: string, namespace: string | undefined): Data | undefined {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
  if (!o) return undefined;
  if (kind === 'ConfigMap') return (o.data ?? {}) as Data;
  const decoded = Object.fromEntries(Object.entries((o.data ?? {}) as Data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  return { ...decoded, ...((o.stringData ?? {}) as Data) };
}

export interface ResolvedEnv {
  env: Record<string, string>;
  /** Where each variable came from, e.g. `Secret/hookline-secrets`. */
  origin: Record<string, string>;
  problems: string[];
}

export function containerEnv(objects: K8sObject[], container: IContainer, namespace: string | undefined): ResolvedEnv {
  const out: ResolvedEnv = { env: {}, origin: {}, problems: [] };
  const set = (k: string, v: string, from: string): void => {
    out.env[k] = v;
    out.origin[k] = from;
  };
  for (const src of container.envFrom ?? []) {
    const ref = src.configMapRef ? { kind: 'ConfigMap' as const, r: src.configMapRef } : src.secretRef ? { kind: 'Secret' as const, r: src.secretRef } : undefined;
    if (!ref?.r.name) {
      out.problems.push(`${container.name}: an envFrom entry names no ConfigMap or Secret`);
      continue;
    }
    const data = sourceData(objects, ref.kind, ref.r.name, namespace);
    if (!data) {
      if (!ref.r.optional) out.problems.push(`${container.name}: ${ref.kind}/${ref.r.name} is not in the rendered output`);
      continue;
    }
    for (const [k, v] of Object.entries(data)) set(`${src.prefix ?? ''}${k}`, v, `${ref.kind}/${ref.r.name}`);
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) set(e.name, e.value, 'env');
    else if (e.valueFrom?.configMapKeyRef || e.valueFrom?.secretKeyRef) {
      const kind = e.valueFrom.configMapKeyRef ? 'ConfigMap' : 'Secret';
      const ref = (e.valueFrom.configMapKeyRef ?? e.valueFrom.secretKeyRef)!;
      const value = sourceData(objects, kind, ref.name ?? '', namespace)?.[ref.key];
      if (value === undefined) {
        if (!ref.optional) out.problems.push(`${container.name}: ${e.name} refers to ${kind}/${ref.name} key ${ref.key}, which does not exist`);
      } else set(e.name, value, `${kind}/${ref.name}`);
    } else out.problems.push(`${container.name}: ${e.name} has a value source the checks cannot resolve`);
  }
  return out;
}
