// A small, honest implementation of the part of kustomize that deploy/kustomize uses, so
// the manifests can be rendered and checked offline without kubectl: `resources` (files
// and kustomization folders), `namespace`, `images`, `replicas` and `patches` (strategic
// merge patches from files). Any other field is refused rather than silently ignored;
// test/deploy-manifests.test.ts compares the result with `kubectl kustomize`.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { strategicMerge, type Json, type JsonObject } from './strategic-merge';

export interface K8sObject extends JsonObject {
  apiVersion: string;
  kind: string;
  metadata: JsonObject & { name: string; namespace?: string };
}

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images', 'replicas', 'patches']);
// Kinds that live outside namespaces keep none.
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'PriorityClass', 'StorageClass']);

/** Every non-empty YAML document of a file, parsed. */
export function readYamlDocs(file: string): JsonObject[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      return doc.toJS() as unknown;
    })
    .filter((o): o is JsonObject => o !== null && typeof o === 'object' && !Array.isArray(o));
}

export function readYamlObjects(file: string): K8sObject[] {
  return readYamlDocs(file).map((o) => {
    const meta = o.metadata as JsonObject | undefined;
    if (typeof o.kind !== 'string' || typeof meta?.name !== 'string') throw new Error(`${file}: an object without kind or metadata.name`);
    return o as K8sObject;
  });
}

export function objectKey(o: { kind: string; metadata: { name: string; namespace?: string } }): string {
  return `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** Renders the kustomization in `dir` into plain objects. */
export function kustomizeBuild(dir: string): K8sObject[] {
  const file = join(dir, 'kustomization.yaml');
  const [k] = readYamlDocs(file);
  if (!k) throw new Error(`${file} is empty`);
  const unsupported = Object.keys(k).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length) throw new Error(`${file}: kustomize-lite does not implement ${unsupported.join(', ')}`);

  const list = <T>(name: string): T[] => (k[name] ?? []) as unknown as T[];
  let objects: K8sObject[] = [];
  for (const entry of list<string>('resources')) {
    const path = resolve(dir, entry);
    objects.push(...(statSync(path).isDirectory() ? kustomizeBuild(path) : readYamlObjects(path)));
  }
  const seen = new Set<string>();
  for (const o of objects) {
    if (seen.has(objectKey(o))) throw new Error(`${dir}: ${objectKey(o)} is declared twice`);
    seen.add(objectKey(o));
  }
  for (const p of list<{ path?: string }>('patches')) {
    const patchFile = p.path ? resolve(dir, p.path) : undefined;
    if (!patchFile || !existsSync(patchFile)) throw new Error(`${file}: only patches with an existing path are implemented`);
    for (const patch of readYamlObjects(patchFile)) objects = applyPatch(objects, patch, patchFile);
  }
  if (typeof k.namespace === 'string') {
    const ns = k.namespace;
    objects = objects.map((o) => (CLUSTER_SCOPED.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace: ns } }));
  }
  for (const rule of list<{ name: string; count: number }>('replicas')) {
    const targets = objects.filter((o) => ['Deployment', 'StatefulSet', 'ReplicaSet'].includes(o.kind) && o.metadata.name === rule.name);
    if (!targets.length) throw new Error(`${file}: replicas names ${rule.name}, which is not rendered`);
    for (const t of targets) (t.spec as JsonObject).replicas = rule.count;
  }
  const images = list<ImageRule>('images');
  return images.length ? objects.map((o) => rewriteImages(o, images)) : objects;
}

function applyPatch(objects: K8sObject[], patch: K8sObject, from: string): K8sObject[] {
  const i = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
  if (i < 0) throw new Error(`${from}: the patch targets ${patch.kind}/${patch.metadata.name}, which is not rendered`);
  return objects.map((o, j) => (j === i ? (strategicMerge(o, patch) as K8sObject) : o));
}

/** kustomize's images transformer: `image: <name>[:tag]` of any container, anywhere. */
function rewriteImages(value: Json, rules: ImageRule[]): K8sObject {
  const walk = (v: Json, key?: string): Json => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([key, x]) => [key, walk(x ?? null, key)]));
    if (key === 'image' && typeof v === 'string') {
      const { name, tag } = splitImage(v);
      const rule = rules.find((r) => r.name === name);
      if (rule) return `${rule.newName ?? name}${rule.newTag !== undefined ? `:${rule.newTag}` : tag ? `:${tag}` : ''}`;
    }
    return v;
  };
  return walk(value) as K8sObject;
}

export function splitImage(image: string): { name: string; tag?: string } {
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > slash ? { name: image.slice(0, colon), tag: image.slice(colon + 1) } : { name: image };
}

/** The folder of the repo, from any file under deploy/checks. */
export const REPO_ROOT = resolve(dirname(__filename), '../..');
