// Edge agents must not reach Hookline's worker processes: an agent sends where a tenant's
// destinations say and hands the answers back. Checked on the rendered objects: every
// workload pod but the api's, ingest's and the agent's is selected by a NetworkPolicy that
// admits no edge pod; an agent's ConfigMap lists its targets.
import type { K8sObject } from './kustomize-lite';

type Labels = Record<string, string>;
interface Expression {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}
interface Selector {
  matchLabels?: Labels;
  matchExpressions?: Expression[];
}

const COMPONENT = 'app.kubernetes.io/component';
/** What an edge agent's pod carries (deploy/kustomize/overlays/example/edge-agent.yaml). */
const EDGE_POD: Labels = { 'app.kubernetes.io/name': 'hookline-edge', 'app.kubernetes.io/part-of': 'hookline', [COMPONENT]: 'edge' };
const OPEN_COMPONENTS = new Set(['api', 'ingest', 'edge']);

/** Kubernetes' label selector semantics (an empty selector matches everything). */
export function selects(selector: Selector | undefined, labels: Labels): boolean {
  if (!selector) return true;
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every((e) => {
      const has = Object.hasOwn(labels, e.key);
      if (e.operator === 'Exists') return has;
      if (e.operator === 'DoesNotExist') return !has;
      const inValues = has && (e.values ?? []).includes(labels[e.key]!);
      return e.operator === 'In' ? inValues : !inValues;
    })
  );
}

interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: unknown;
}
interface PolicySpec {
  podSelector: Selector;
  policyTypes?: string[];
  ingress?: { from?: Peer[] }[];
}

/** Whether the policy lets a pod with these labels (in any namespace) in. */
function admits(spec: PolicySpec, labels: Labels): boolean {
  if (!(spec.policyTypes ?? ['Ingress']).includes('Ingress')) return true;
  return (spec.ingress ?? []).some((rule) => rule.from === undefined || rule.from.length === 0 || rule.from.some((p) => p.ipBlock !== undefined || (p.podSelector === undefined ? p.namespaceSelector !== undefined : selects(p.podSelector, labels))));
}

export function networkProblems(objects: K8sObject[]): string[] {
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => ({ name: o.metadata.name, spec: o['spec'] as unknown as PolicySpec }));
  const problems: string[] = [];
  for (const o of objects) {
    if (o.kind !== 'Deployment') continue;
    const labels = ((o['spec'] as { template?: { metadata?: { labels?: Labels } } }).template?.metadata?.labels ?? {}) as Labels;
    if (OPEN_COMPONENTS.has(labels[COMPONENT] ?? '')) continue;
    const guarding = policies.filter((p) => selects(p.spec.podSelector, labels));
    if (guarding.length === 0) problems.push(`Deployment/${o.metadata.name}: no NetworkPolicy selects its pods, so an edge agent in the cluster reaches its ports`);
    // Policies add up: one admitting edge pods opens the pod to them whatever the others say.
    else if (guarding.some((p) => admits(p.spec, EDGE_POD))) problems.push(`Deployment/${o.metadata.name}: NetworkPolicy ${guarding.filter((p) => admits(p.spec, EDGE_POD)).map((p) => p.name).join(', ')} admits edge agent pods`);
  }
  for (const o of objects) {
    const data = (o['data'] ?? {}) as Record<string, string>;
    if (o.kind === 'ConfigMap' && (o.metadata['labels'] as Labels | undefined)?.[COMPONENT] === 'edge' && !(data['EDGE_ALLOWED_TARGETS'] ?? '').trim()) {
      problems.push(`ConfigMap/${o.metadata.name}: EDGE_ALLOWED_TARGETS is empty, so the agent sends to any address a tenant names`);
    }
  }
  return problems;
}
