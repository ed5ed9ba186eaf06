import type { Budget } from '../budget';
import { isObject, member } from '../json-values';

/**
 * The values a dotted path (`body.data.items.sku`) reaches from `ctx`. A numeric segment
 * indexes an array; any other segment that meets an array is applied to each of its
 * object elements (MongoDB's reading), so a path can reach several values. Missing
 * members contribute nothing: an empty result means "the field does not exist".
 */
export function resolveField(ctx: unknown, segments: readonly string[], budget: Budget): unknown[] {
  let current: unknown[] = [ctx];
  for (const seg of segments) {
    const next: unknown[] = [];
    const index = /^\d+$/.test(seg) ? Number(seg) : undefined;
    for (const v of current) {
      if (isObject(v)) {
        const m = member(v, seg);
        if (m.found) next.push(m.value);
      } else if (Array.isArray(v)) {
        if (index !== undefined) {
          if (index < v.length) next.push(v[index]);
          continue;
        }
        for (const el of v) {
          budget.tick();
          if (!isObject(el)) continue;
          const m = member(el, seg);
          if (m.found) next.push(m.value);
        }
      }
      budget.tick();
    }
    if (next.length === 0) return next;
    current = next;
  }
  return current;
}

/** The values an operator compares against: each value, and each element of an array value. */
export function candidates(values: readonly unknown[], budget: Budget): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    out.push(v);
    if (Array.isArray(v)) {
      budget.tick(v.length);
      for (const el of v) out.push(el);
    }
  }
  return out;
}
