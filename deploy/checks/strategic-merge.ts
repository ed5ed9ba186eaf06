// The subset of Kubernetes' strategic merge patch that our overlays can use: maps merge
// key by key, `null` deletes a key, lists of named things merge by their patch merge key
// (as the API declares it), every other list is replaced. `$patch` directives are refused.

export type Json = string | number | boolean | null | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json | undefined;
}

/** patchMergeKey of the list fields we may patch (k8s.io/api struct tags). */
const MERGE_KEYS: Record<string, (item: JsonObject) => string | undefined> = {
  containers: (i) => str(i.name),
  initContainers: (i) => str(i.name),
  env: (i) => str(i.name),
  volumes: (i) => str(i.name),
  volumeMounts: (i) => str(i.mountPath),
  imagePullSecrets: (i) => str(i.name),
  // Container ports merge on containerPort, Service ports on port.
  ports: (i) => str(i.containerPort ?? i.port),
};

function str(v: Json | undefined): string | undefined {
  return v === undefined || v === null ? undefined : String(v);
}

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function strategicMerge(target: Json | undefined, patch: Json | undefined, field?: string): Json | undefined {
  if (isObject(patch)) {
    if (Object.keys(patch).some((k) => k.startsWith('$'))) throw new Error(`strategic-merge: $-directives are not implemented (${field ?? 'root'})`);
    const base: JsonObject = isObject(target) ? { ...target } : {};
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete base[k];
      else base[k] = strategicMerge(base[k], v, k);
    }
    return base;
  }
  const keyOf = field ? MERGE_KEYS[field] : undefined;
  if (Array.isArray(patch) && Array.isArray(target) && keyOf) {
    // As kubectl orders it: the patch's items in patch order, then the rest of the target's.
    const keys = patch.map((item) => {
      const key = isObject(item) ? keyOf(item) : undefined;
      if (key === undefined) throw new Error(`strategic-merge: an item of ${field} has no merge key`);
      return key;
    });
    const find = (key: string): Json | undefined => target.find((x) => isObject(x) && keyOf(x) === key);
    const merged = patch.map((item, i) => strategicMerge(find(keys[i]!), item) ?? null);
    return [...merged, ...target.filter((x) => !(isObject(x) && keys.includes(keyOf(x) ?? '')))];
  }
  return patch;
}
